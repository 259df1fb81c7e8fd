// A row's route label, "<provider>/<upstream model>", as the metrics and the access log write it.

const names = new Map<string, Map<string, string>>();

/**
 * The label of a route, made once and then found by its two parts: built per row, the string was
 * concatenated, then flattened and hashed again by each reader (bench/RESULTS.md). Bounded by the
 * routes the configuration has named, which are the only ones a row carries.
 */
export function routeName(provider: string, upstreamModel: string): string {
  let byModel = names.get(provider);
  if (!byModel) names.set(provider, (byModel = new Map()));
  let name = byModel.get(upstreamModel);
  if (name === undefined) byModel.set(upstreamModel, (name = `${provider}/${upstreamModel}`));
  return name;
}
