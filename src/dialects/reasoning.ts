// Anthropic thinking budgets ⇄ OpenAI reasoning_effort. Both directions read these tables so a
// round trip keeps the effort.

// LiteLLM's budgets for reasoning_effort (translation.md §2). xhigh/max exist only on newer
// OpenAI models; their budgets continue the doubling.
const EFFORT_BUDGET: ReadonlyMap<string, number> = new Map([
  ["low", 1024],
  ["medium", 2048],
  ["high", 4096],
  ["xhigh", 8192],
  ["max", 16384],
]);

// Efforts that mean "no reasoning" (translation.md §2).
const EFFORT_OFF: ReadonlySet<string> = new Set(["none", "minimal"]);

// Toward Chat only low/medium/high: every reasoning model takes those, while xhigh/max are
// refused by most. A budget falls in the highest bucket whose floor it reaches.
const BUDGET_BUCKETS: readonly (readonly [floor: number, effort: string])[] = [
  [4096, "high"],
  [2048, "medium"],
  [0, "low"],
];

/** Anthropic's minimum thinking budget; budget_tokens must also stay below max_tokens. */
export const MIN_THINKING_BUDGET = 1024;

export function effortForBudget(budget: number): string {
  return BUDGET_BUCKETS.find(([floor]) => budget >= floor)?.[1] ?? "low";
}

export function budgetForEffort(effort: string): number | undefined {
  return EFFORT_BUDGET.get(effort);
}

export function effortIsOff(effort: string): boolean {
  return EFFORT_OFF.has(effort);
}
