/** Matching a native runtime's tensor names to the manifest's input and output names. */

/**
 * Whether a tensor name is the manifest's `wanted`: exactly, or as LiteRT names a signature's tensors
 * (`seq_16_input_ids`, `serving_default_logits_output`, with an optional `:0`).
 */
export function namesTensor(tensorName: string, wanted: string): boolean {
  const bare = tensorName.replace(/:\d+$/, '');
  return bare === wanted || new RegExp(`(^|_)${wanted}(_output)?$`).test(bare);
}

/** The index of the one tensor named `wanted`, or an error listing the names there are. */
export function tensorIndex(names: readonly string[], wanted: string, what: string): number {
  const found = names.flatMap((n, i) => (namesTensor(n, wanted) ? [i] : []));
  if (found.length !== 1) {
    throw new Error(`${what}: ${found.length ? 'several' : 'no'} tensor(s) named '${wanted}' among [${names.join(', ')}]`);
  }
  return found[0];
}
