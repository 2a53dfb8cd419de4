import { defineChaosSuite } from './chaos-suite.ts';

defineChaosSuite('sqlite');
