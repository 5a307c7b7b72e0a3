// One timed TF.js call as an app makes it, shared by benchmarks/tfjs_bucket_curve.mjs and tfjs_call_compare.mjs:
// the three input tensors made from `ids` (the first `used` positions attended, the rest padding), the graph's
// sentence embedding executed and read back with data(), everything disposed. Returns the wall time in ms.
import { performance } from 'node:perf_hooks';

export async function timedCall(tf, { model, output }, ids, used = ids.length) {
  const T = ids.length;
  const start = performance.now();
  const feeds = { input_ids: tf.tensor2d(ids, [1, T], 'int32'),
    attention_mask: tf.tensor2d(new Int32Array(T).fill(1, 0, used), [1, T], 'int32'),
    token_type_ids: tf.tensor2d(new Int32Array(T), [1, T], 'int32') };
  const out = model.execute(feeds, output);
  await out.data();
  out.dispose(); Object.values(feeds).forEach((t) => t.dispose());
  return performance.now() - start;
}
