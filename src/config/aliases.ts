import type { ModelConfig } from "./schema.ts";

// Alias patterns (docs/operations.md#alias-patterns): an alias ending in `*` names every id that
// starts with what comes before it, so one line takes all of a model's dated ids.

export const isAliasPattern = (name: string): boolean => name.endsWith("*");

/**
 * Why the models' patterns would make a name ambiguous, as [field path, reason], or null. A pattern
 * may not match another model's id or exact alias (the exact name would win and the pattern would
 * silently lie), nor overlap another model's pattern (one prefix of the other: which model a name
 * reaches would depend on their order). Only one `*`, at the end, and something before it.
 */
export function aliasPatternConflict(models: ModelConfig[]): [string, string] | null {
  const patterns: { prefix: string; model: number; path: string }[] = [];
  const exact: { name: string; model: number }[] = [];
  for (const [i, m] of models.entries()) {
    for (const [j, name] of (m.aliases ?? []).entries()) {
      const path = `models[${i}].aliases[${j}]`;
      if (!isAliasPattern(name)) {
        // "claude-*-latest" is no pattern, and as a literal name no client would ever send it.
        if (name.includes("*")) return [path, `a pattern is a prefix followed by one trailing * (got '${name}')`];
        exact.push({ name, model: i });
        continue;
      }
      const prefix = name.slice(0, -1);
      if (prefix === "" || prefix.includes("*")) return [path, `a pattern is a prefix followed by one trailing * (got '${name}')`];
      patterns.push({ prefix, model: i, path });
    }
    if (m.id.includes("*")) return [`models[${i}].id`, `a model id cannot contain * (got '${m.id}')`];
    exact.push({ name: m.id, model: i });
  }
  for (const [a, p] of patterns.entries()) {
    const shadowed = exact.find((e) => e.model !== p.model && e.name.startsWith(p.prefix));
    if (shadowed) return [p.path, `'${p.prefix}*' matches '${shadowed.name}' of models[${shadowed.model}]`];
    // Against the earlier ones only: the refusal names the later field, as a duplicate name's does.
    const other = patterns.find((q, b) => b < a && q.model !== p.model && (q.prefix.startsWith(p.prefix) || p.prefix.startsWith(q.prefix)));
    if (other) return [p.path, `'${p.prefix}*' overlaps '${other.prefix}*' of models[${other.model}]`];
  }
  return null;
}
