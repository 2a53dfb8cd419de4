import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  badgeFiles,
  badgeFor,
  markdownSnippet,
  renderSvg,
  shieldsJson,
  shieldsUrl,
  verifiedLevel,
} from '../src/badge.ts';
import type { ManifestCheck } from '../src/manifest.ts';
import type { TestResult, TestStatus } from '../src/types.ts';

function result(level: number, status: TestStatus, deprecated = false): TestResult {
  const r: TestResult = {
    test_id: `T${level}`,
    name: 'n',
    level,
    category: '',
    file: 'f',
    status,
    duration_ms: 0,
    steps: [],
  };
  if (deprecated) r.deprecated = true;
  return r;
}
const all = (upTo: number) => Array.from({ length: upTo + 1 }, (_, l) => result(l, 'pass'));
const manifest = (level: number, tier = 'runtime', valid = true): ManifestCheck => ({
  url: 'http://x/ojs/manifest',
  fetched: true,
  valid,
  problems: [],
  declared_level: level,
  declared_tier: tier,
});

describe('verifiedLevel', () => {
  it('needs every level from 0 present and passing', () => {
    assert.equal(verifiedLevel(all(4)), 4);
    assert.equal(verifiedLevel([result(0, 'pass'), result(2, 'pass')]), 0);
    assert.equal(verifiedLevel([result(1, 'pass')]), -1);
    assert.equal(verifiedLevel([...all(2), result(1, 'fail')]), 0);
    assert.equal(verifiedLevel([...all(1), result(1, 'skip', true)]), 1);
    assert.equal(verifiedLevel([...all(1), result(1, 'skip')]), 0);
  });
});

describe('badgeFor (seed §7)', () => {
  it('shows the declared and verified level with the tier', () => {
    const b = badgeFor(all(4), manifest(2), '1.0.0');
    assert.equal(b.eligible, true);
    assert.equal(b.text, 'OJS Conformant Level 2 (Runtime)');
    assert.match(b.reason!, /levels up to 4 pass/);
    assert.equal(badgeFor(all(2), manifest(2), '1.0.0').reason, undefined);
    assert.equal(
      badgeFor(all(0), manifest(0, 'parser'), '1').text,
      'OJS Conformant Level 0 (Parser)',
    );
  });
  it('caps the Full tier at Runtime, which is all this harness verifies', () => {
    const b = badgeFor(all(4), manifest(4, 'full'), '1.0.0');
    assert.equal(b.text, 'OJS Conformant Level 4 (Runtime)');
    assert.match(b.reason!, /Full tier/);
  });
  it('is refused when the declared level is not verified or the manifest is invalid', () => {
    const over = badgeFor(all(1), manifest(3), '1.0.0');
    assert.equal(over.eligible, false);
    assert.equal(over.text, 'OJS not conformant');
    assert.match(over.reason!, /declares level 3 but only levels 0-1 passed/);
    assert.equal(badgeFor(all(4), manifest(4, 'runtime', false), '1').eligible, false);
    assert.equal(badgeFor([result(0, 'fail')], undefined, '1').eligible, false);
  });
  it('without a manifest check the verified level is shown', () => {
    assert.equal(badgeFor(all(3), undefined, '1').text, 'OJS Conformant Level 3 (Runtime)');
  });
});

describe('badge assets (seed §7.2)', () => {
  const info = badgeFor(all(2), manifest(2), '1.0.0');
  it('builds the shields.io URL and Markdown of the seed example', () => {
    assert.equal(shieldsUrl(info), 'https://img.shields.io/badge/OJS-Level%202%20Runtime-blue');
    assert.equal(
      markdownSnippet(info).split('\n')[0],
      '[![OJS Conformant Level 2 (Runtime)](https://img.shields.io/badge/OJS-Level%202%20Runtime-blue)](https://openjobspec.org/conformance)',
    );
    assert.match(
      markdownSnippet(info, { runAt: 'T', target: 'http://x' }),
      /<!-- OJS conformance test suite 1\.0\.0, run T, against http:\/\/x -->/,
    );
  });
  it('writes a shields.io endpoint JSON', () => {
    assert.deepEqual(shieldsJson(info), {
      schemaVersion: 1,
      label: 'OJS',
      message: 'Level 2 Runtime',
      color: 'blue',
    });
    assert.deepEqual(shieldsJson(badgeFor([], undefined, '1')), {
      schemaVersion: 1,
      label: 'OJS',
      message: 'not conformant',
      color: 'red',
    });
  });
  it('renders an SVG with the badge text', () => {
    const svg = renderSvg(info);
    assert.match(svg, /^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg" width="\d+" height="20"/);
    assert.match(svg, /aria-label="OJS Conformant Level 2 \(Runtime\)"/);
    assert.match(
      svg,
      /<title>OJS Conformant Level 2 \(Runtime\) - OJS conformance test suite 1\.0\.0<\/title>/,
    );
    assert.match(svg, />Level 2 \(Runtime\)</);
    assert.match(svg, /fill="#007ec6"/);
    assert.match(renderSvg(badgeFor([], undefined, '1')), /fill="#e05d44"/);
  });
  it('names the sibling files', () => {
    assert.deepEqual(badgeFiles('out/badge.svg'), {
      svg: 'out/badge.svg',
      json: 'out/badge.json',
      markdown: 'out/badge.md',
    });
    assert.deepEqual(badgeFiles('b'), { svg: 'b', json: 'b.json', markdown: 'b.md' });
  });
});
