import { defineProcessSuites } from './processes-suite.ts';

defineProcessSuites('sqlite');
