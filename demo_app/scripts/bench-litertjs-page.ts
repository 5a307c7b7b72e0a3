/**
 * The benchmark's LiteRT.js signature page (bundled by scripts/bench.ts --signatures with esbuild): the page's folder
 * holds `model/` (a TFLite export with one signature per length) and LiteRT.js's wasm files. It compiles the model on
 * LiteRT.js's wasm accelerator (XNNPACK; ?threads=N: its threaded build on N threads) and
 * `window.benchSignatures(rounds, runs, pauseMs)` times each signature's run alone (LiteRT.js's `run`: inputs in,
 * outputs out, no tokenising or reading), the signatures interleaved round by round so that they see the same
 * machine; with `pauseMs` > 0 each run follows a pause of that long, as a page's query follows the user's typing.
 * `window.signaturePage.int8Dot` is what this browser's i32x4.relaxed_dot_i8x16_i7x16_add_s answers on XNNPACK's probe
 * of it, which decides XNNPACK's int8 kernels (see bench.ts).
 */
import { Tensor, loadAndCompile, loadLiteRt } from '@litertjs/core';

export interface SignaturePageState {
  ready: boolean;
  error: string | null;
  /** Each signature's key and sequence length, shortest first. */
  signatures: { key: string; length: number }[];
  /** The four lanes of i32x4.relaxed_dot_i8x16_i7x16_add_s on XNNPACK's probe vectors, or null without relaxed SIMD. */
  int8Dot: number[] | null;
  threads: number;
}

declare global {
  interface Window {
    signaturePage: SignaturePageState;
    /** Milliseconds of each run, by signature key, `rounds` x `runs` each. */
    benchSignatures(rounds: number, runs: number, pauseMs: number): Promise<Record<string, number[]>>;
  }
}

const state: SignaturePageState = { ready: false, error: null, signatures: [], int8Dot: null, threads: 1 };
window.signaturePage = state;

/**
 * XNNPACK's probe of the relaxed int8 dot product (its hardware config, `use_wasm_usdot`): a = splat(-128),
 * b = (-128 x6, -1 x4, -128 x2, -1 x4), c = 0. Exact products answer (-65536, -98048, -98048, -130560); a lowering
 * through x86's pmaddubsw, which saturates its 16-bit pair sums, answers -65536 in every lane, and XNNPACK then runs
 * its 16-bit (i32x4.dot_i16x8_s) int8 kernels instead of the relaxed dot product ones.
 */
export function relaxedInt8Dot(): number[] | null {
  const constant = (bytes: number[]) => [0xfd, 0x0c, ...bytes.map((x) => x & 0xff)];
  const b = [-128, -128, -128, -128, -128, -128, -1, -1, -1, -1, -128, -128, -1, -1, -1, -1];
  const lane = (k: number): number => {
    const body = [0x00, ...constant(new Array(16).fill(-128)), ...constant(b), ...constant(new Array(16).fill(0)),
      0xfd, 0x93, 0x02, // i32x4.relaxed_dot_i8x16_i7x16_add_s
      0xfd, 0x1b, k, // i32x4.extract_lane k
      0x0b];
    const code = [0x01, body.length, ...body];
    const bytes = new Uint8Array([0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, 0x01, 0x05, 0x01, 0x60, 0x00, 0x01, 0x7f,
      0x03, 0x02, 0x01, 0x00, 0x07, 0x05, 0x01, 0x01, 0x66, 0x00, 0x00, 0x0a, code.length, ...code]);
    const instance = new WebAssembly.Instance(new WebAssembly.Module(bytes));
    return (instance.exports.f as () => number)();
  };
  try {
    return [0, 1, 2, 3].map(lane);
  } catch {
    return null; // no relaxed SIMD
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function main(): Promise<void> {
  const here = new URL('./', location.href).href;
  const threads = Number(new URLSearchParams(location.search).get('threads') ?? 1);
  await loadLiteRt(here, threads > 1 ? { threads: true } : undefined);
  const model = await loadAndCompile(new URL('model/model.tflite', here).href, { accelerator: 'wasm', cpuOptions: { numThreads: threads } });
  const runs = Object.entries(model.signatures).map(([key, signature]) => {
    const details = signature.getInputDetails();
    const length = details[0].shape[1];
    // Any ids in the vocabulary and a full mask: the products do not depend on the values.
    const ids = Int32Array.from({ length }, (_, i) => i + 1);
    const feeds = Object.fromEntries(details.map((d) => [d.name, new Tensor(d.name.includes('token_type') ? new Int32Array(length) : d.name.includes('mask') ? new Int32Array(length).fill(1) : ids, [1, length])]));
    return { key, length, run: async () => Object.values(await signature.run(feeds)).forEach((t) => t.delete()) };
  }).sort((x, y) => x.length - y.length);
  for (const r of runs) await r.run(); // XNNPACK sets up each signature on its first run
  window.benchSignatures = async (rounds, perRound, pauseMs) => {
    const ms: Record<string, number[]> = Object.fromEntries(runs.map((r) => [r.key, []]));
    for (let round = 0; round < rounds; round++) {
      for (const r of runs) {
        for (let i = 0; i < perRound; i++) {
          if (pauseMs > 0) await sleep(pauseMs);
          const t0 = performance.now();
          await r.run();
          ms[r.key].push(performance.now() - t0);
        }
      }
    }
    return ms;
  };
  Object.assign(state, { ready: true, signatures: runs.map(({ key, length }) => ({ key, length })), int8Dot: relaxedInt8Dot(), threads });
}

main().catch((err: unknown) => {
  state.error = err instanceof Error ? err.message : String(err);
});
