#!/usr/bin/env node
/**
 * `npm run test:hermes`: the JS core (test/hermes/harness.ts) under Hermes, React Native's JavaScript engine.
 *
 *  1. esbuild bundles the harness and the package's src into one script (IIFE, syntax left as written).
 *  2. Node runs that bundle once (the reference answers, and the regular expressions the tokenizer builds at run time).
 *  3. React Native's Babel preset (babel-preset-expo, the demo app's: what Metro runs on an Expo app) lowers it as Metro
 *     does for Hermes, in its two profiles: `hermes-stable` (Hermes V1, React Native's engine now: keeps classes and
 *     async functions) and `hermes-v0` (legacy Hermes: lowers them).
 *  4. React Native's hermesc (npm hermes-compiler, the version react-native 0.88 pins; Hermes V1, compiler only)
 *     compiles both to bytecode, and the regular expressions the bundle built at run time in step 2 as literals (its
 *     regex parser is the VM's: accepting them is what Hermes V1 runs).
 *  5. The Hermes 0.12 VM (npm hermes-engine-cli, the newest Hermes VM on npm) runs the `hermes-v0` output with the
 *     cases, and the RegExp rewrites of step 2 for its polyfill (harness.ts, `installRegExpShim`).
 *
 * The cases file (tests/test_hermes.py writes it) is EDGEBERT_HERMES_CASES; work files go to EDGEBERT_HERMES_OUT (default: a
 * temporary directory, removed). Prints one line `EDGEBERT_HERMES_BUILD {json}` with every step's outcome and the
 * harness's answers (Node's and Hermes's); exits 1 if a step did not run to its end.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import vm from 'node:vm';

import * as esbuild from 'esbuild';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const PACKAGE = path.resolve(HERE, '..', '..');
const REPO = path.resolve(PACKAGE, '..', '..');
const MARK = 'EDGEBERT_HERMES_RESULT ';
const PLATFORM = { linux: 'linux64-bin', darwin: 'osx-bin', win32: 'win64-bin' }[process.platform];
const EXE = process.platform === 'win32' ? '.exe' : '';

const problems = [];
const report = {};

function fail(message) {
  problems.push(message);
  process.stderr.write(`test:hermes: ${message}\n`);
}

function finish() {
  report.problems = problems;
  const answer = report.vm?.result;
  if (answer) {
    process.stderr.write(`test:hermes: Hermes ${answer.engine.hermes} ran the harness (polyfills: ${answer.polyfills.join(', ') || 'none'}); ` +
      `React Native's hermesc (${report.versions.hermesc}) compiled ${Object.entries(report.hermesc).map(([p, c]) => `${p}: ${c.rc === 0 ? 'ok' : 'rejected'}`).join(', ')}\n`);
  }
  process.stdout.write(`EDGEBERT_HERMES_BUILD ${JSON.stringify(report)}\n`);
  process.exit(problems.length ? 1 : 0);
}

function versionOf(dir) {
  return JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8')).version;
}

function run(command, args, timeout = 300_000) {
  const proc = spawnSync(command, args, { encoding: 'utf8', timeout, maxBuffer: 256 * 1024 * 1024 });
  return { rc: proc.status, signal: proc.signal, stdout: proc.stdout ?? '', stderr: (proc.stderr ?? '') + (proc.error ? String(proc.error) : '') };
}

function resultLine(stdout) {
  const line = stdout.split('\n').find((l) => l.startsWith(MARK));
  return line ? JSON.parse(line.slice(MARK.length)) : null;
}

// --- inputs -------------------------------------------------------------------------------------------------------

const casesFile = process.env.EDGEBERT_HERMES_CASES;
if (!casesFile) {
  fail('EDGEBERT_HERMES_CASES is not set: run .venv/bin/python -m pytest tests/test_hermes.py, which makes the exports and writes the cases');
  finish();
}
const casesJson = fs.readFileSync(casesFile, 'utf8');
const out = process.env.EDGEBERT_HERMES_OUT || fs.mkdtempSync(path.join(os.tmpdir(), 'edgebert-hermes-'));
fs.mkdirSync(out, { recursive: true });

const modules = path.join(PACKAGE, 'node_modules');
const HERMES = path.join(modules, 'hermes-engine-cli', PLATFORM ?? '?', `hermes${EXE}`);
const HERMESC = path.join(modules, 'hermes-compiler', 'hermesc', PLATFORM ?? '?', `hermesc${EXE}`);
for (const [what, file] of [['the Hermes VM (npm hermes-engine-cli)', HERMES], ["React Native's hermesc (npm hermes-compiler)", HERMESC]]) {
  if (!fs.existsSync(file)) fail(`${what} is not installed at ${file}: run npm ci --prefix js/edgebert-runtime`);
}
// React Native's Babel preset as an app has it: the demo app's (Expo) node_modules.
const appRequire = createRequire(path.join(REPO, 'demo_app', 'package.json'));
let babel, presetPath, rewritePattern;
try {
  babel = appRequire('@babel/core');
  presetPath = appRequire.resolve('babel-preset-expo');
  rewritePattern = appRequire('regexpu-core');
} catch (err) {
  fail(`React Native's Babel preset (babel-preset-expo, @babel/core, regexpu-core: the demo app's packages) is not installed: run demo_app/scripts/install.sh (${err.message.split('\n')[0]})`);
}
if (problems.length) finish();

report.versions = {
  hermesc: `hermes-compiler ${versionOf(path.join(modules, 'hermes-compiler'))}`,
  vm: `hermes-engine-cli ${versionOf(path.join(modules, 'hermes-engine-cli'))}`,
  babelPreset: `babel-preset-expo ${versionOf(path.dirname(appRequire.resolve('babel-preset-expo/package.json')))}`,
  babel: `@babel/core ${babel.version}`,
};
report.versions.hermescBanner = run(HERMESC, ['--version']).stdout.match(/Hermes release version: .*|HBC bytecode version: .*/g)?.join(', ') ?? null;
report.versions.vmBanner = run(HERMES, ['--version']).stdout.match(/Hermes release version: .*|HBC bytecode version: .*/g)?.join(', ') ?? null;

// --- 1. bundle ------------------------------------------------------------------------------------------------------

const built = await esbuild.build({
  entryPoints: [path.join(HERE, 'harness.ts')],
  bundle: true, write: false, format: 'iife', platform: 'neutral', target: 'esnext', logLevel: 'error',
  mainFields: ['react-native', 'browser', 'module', 'main'], conditions: ['react-native', 'browser', 'import'],
});
const bundle = built.outputFiles[0].text;
fs.writeFileSync(path.join(out, 'bundle.js'), bundle);
report.bundleBytes = Buffer.byteLength(bundle);

// --- 2. Node: reference answers, and the RegExps the bundle builds at run time --------------------------------------

const SPY = `(function () {
  var Native = RegExp, seen = globalThis.EDGEBERT_REGEXPS_SEEN = [];
  var spy = function RegExp(pattern, flags) {
    var source = typeof pattern === 'string' ? pattern : pattern.source;
    seen.push([source, flags === undefined ? (typeof pattern === 'string' ? '' : pattern.flags) : flags]);
    return new Native(pattern, flags);
  };
  spy.prototype = Native.prototype;
  globalThis.RegExp = spy;
})();`;

async function inNode() {
  let resolve;
  const done = new Promise((r) => (resolve = r));
  const context = vm.createContext({ print: (...args) => { const text = args.join(' '); if (text.startsWith(MARK)) resolve(text); } });
  vm.runInContext(`var EDGEBERT_HERMES_CASES = ${casesJson};\n${SPY}\n${bundle}`, context, { filename: 'bundle.js' });
  const timer = new Promise((_, reject) => setTimeout(() => reject(new Error('no result within 60 s')), 60_000).unref());
  const line = await Promise.race([done, timer]);
  return { result: JSON.parse(line.slice(MARK.length)), seen: vm.runInContext('EDGEBERT_REGEXPS_SEEN', context) };
}

let seen = [];
try {
  const node = await inNode();
  report.node = node.result;
  seen = node.seen;
} catch (err) {
  fail(`the bundle failed in Node: ${err.stack ?? err}`);
}
// Unicode property escapes (\p{..}) with the u flag: what Hermes 0.12 rejects, rewritten as Babel does for literals.
const unique = [...new Map(seen.map(([s, f]) => [`${f}/${s}`, [s, f]])).values()];
const escapes = unique.filter(([s, f]) => f.includes('u') && /\\[pP]\{/.test(s));
const table = {};
for (const [source, flags] of escapes) {
  table[`${flags}/${source}`] = {
    source: rewritePattern(source, flags, { unicodeFlag: 'transform', unicodePropertyEscapes: 'transform' }),
    flags: flags.replace('u', ''),
  };
}
const literals = unique.map(([s, f], i) => `var r${i} = ${String(new RegExp(s, f))};`).join('\n');
fs.writeFileSync(path.join(out, 'runtime-regexps.js'), `${literals}\n`);
report.runtimeRegExps = { count: unique.length, withPropertyEscapes: escapes.map(([s, f]) => `/${s}/${f}`) };

// --- 3. React Native's Babel preset, as Metro runs it -----------------------------------------------------------------

/** What of the syntax legacy Hermes lacks a script still has. */
function syntaxOf(code) {
  const counts = { classes: 0, asyncFunctions: 0, privateNames: 0, propertyEscapeLiterals: 0 };
  babel.traverse(babel.parseSync(code, { babelrc: false, configFile: false, sourceType: 'script' }), {
    Class() { counts.classes++; },
    Function(p) { if (p.node.async) counts.asyncFunctions++; },
    PrivateName() { counts.privateNames++; },
    RegExpLiteral(p) { if (/\\[pP]\{/.test(p.node.pattern)) counts.propertyEscapeLiterals++; },
  });
  return counts;
}

const PROFILES = ['hermes-stable', 'hermes-v0'];
const lowered = {};
report.babel = { bundle: syntaxOf(bundle) };
for (const profile of PROFILES) {
  try {
    const { code } = babel.transformSync(bundle, {
      babelrc: false, configFile: false, sourceType: 'script', cwd: PACKAGE, filename: path.join(out, 'bundle.js'),
      presets: [[presetPath, { unstable_transformProfile: profile, enableBabelRuntime: false }]],
      caller: { name: 'metro', bundler: 'metro', platform: 'android', engine: 'hermes', isDev: false, isServer: false },
    });
    lowered[profile] = code;
    fs.writeFileSync(path.join(out, `bundle.${profile}.js`), code);
    report.babel[profile] = { bytes: Buffer.byteLength(code), ...syntaxOf(code) };
  } catch (err) {
    fail(`babel-preset-expo (${profile}) failed: ${err.message}`);
  }
}

// --- 4. React Native's hermesc ----------------------------------------------------------------------------------------

function errorsOf(stderr) {
  return stderr.split('\n').filter((l) => / error: /.test(l)).slice(0, 20);
}

report.hermesc = {};
for (const profile of PROFILES.filter((p) => lowered[p])) {
  const hbc = path.join(out, `bundle.${profile}.hbc`);
  const proc = run(HERMESC, ['-O', '-emit-binary', '-out', hbc, path.join(out, `bundle.${profile}.js`)]);
  report.hermesc[profile] = { rc: proc.rc, errors: errorsOf(proc.stderr), hbcBytes: fs.existsSync(hbc) ? fs.statSync(hbc).size : 0 };
  if (proc.rc !== 0) fail(`React Native's hermesc rejected the ${profile} bundle: ${errorsOf(proc.stderr).join(' | ') || proc.stderr.slice(-2000)}`);
}
{
  const regexps = path.join(out, 'runtime-regexps.js');
  const v1 = run(HERMESC, ['-emit-binary', '-out', path.join(out, 'runtime-regexps.hbc'), regexps]);
  const v0 = run(HERMES, [regexps]);
  report.runtimeRegExps.hermesc = { rc: v1.rc, errors: errorsOf(v1.stderr) };
  report.runtimeRegExps.vm = { rc: v0.rc, errors: errorsOf(v0.stderr) };
}

// --- 5. the Hermes 0.12 VM ----------------------------------------------------------------------------------------------

if (lowered['hermes-v0']) {
  const script = path.join(out, 'run.hermes-v0.js');
  fs.writeFileSync(script, `var EDGEBERT_HERMES_CASES = ${casesJson};\nvar EDGEBERT_HERMES_REGEXPS = ${JSON.stringify(table)};\n${lowered['hermes-v0']}`);
  const proc = run(HERMES, ['-w', script], 180_000);
  const result = resultLine(proc.stdout);
  report.vm = { rc: proc.rc, signal: proc.signal, result, stderr: proc.stderr.slice(-4000), stdout: result ? '' : proc.stdout.slice(-4000) };
  if (!result) fail(`the Hermes VM printed no result (exit ${proc.rc}): ${(proc.stderr || proc.stdout).slice(-2000)}`);
}

if (!process.env.EDGEBERT_HERMES_OUT) fs.rmSync(out, { recursive: true, force: true });
finish();
