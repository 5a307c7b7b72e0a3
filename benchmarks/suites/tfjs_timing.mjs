// One TF.js call as an app makes it, shared by tfjs_call_compare.mjs here and by benchmarks/experiments/
// tfjs_bucket_curve.mjs and tfjs_profile_ops.mjs: the three input tensors made from `ids` (the first `used`
// positions attended, the rest padding), the graph's sentence embedding executed and read back with data(),
// everything disposed.
import { performance } from 'node:perf_hooks';

// The call's sentence embedding (a Float32Array).
export async function embedOnce(tf, { model, output }, ids, used = ids.length) {
  const T = ids.length;
  const feeds = { input_ids: tf.tensor2d(ids, [1, T], 'int32'),
    attention_mask: tf.tensor2d(new Int32Array(T).fill(1, 0, used), [1, T], 'int32'),
    token_type_ids: tf.tensor2d(new Int32Array(T), [1, T], 'int32') };
  const out = model.execute(feeds, output);
  const values = await out.data();
  out.dispose(); Object.values(feeds).forEach((t) => t.dispose());
  return values;
}

// The call's wall time in ms.
export async function timedCall(tf, graph, ids, used = ids.length) {
  const start = performance.now();
  await embedOnce(tf, graph, ids, used);
  return performance.now() - start;
}
