// The JSON-in → JSON-out pairs under tests/fixtures/translation/<direction>/:
// <case>.in.json, <case>.out.json and optionally <case>.opts.json (merged over the defaults).
// The file name is the behaviour: "tool_choice-auto-stays-auto" → test "tool_choice auto stays auto".

import { fixtureJson, fixtureNames } from "../support/fixtures.ts";

export interface TranslationCase {
  name: string;
  input: unknown;
  expected: unknown;
  opts: Record<string, unknown>;
}

export function translationCases(direction: string): TranslationCase[] {
  const dir = `translation/${direction}`;
  const withOpts = fixtureNames(dir, ".opts.json");
  return fixtureNames(dir, ".in.json").map((f) => {
    const base = f.slice(0, -".in.json".length);
    return {
      name: base.replaceAll("-", " "),
      input: fixtureJson<unknown>(`${dir}/${f}`),
      expected: fixtureJson<unknown>(`${dir}/${base}.out.json`),
      opts: withOpts.includes(`${base}.opts.json`) ? fixtureJson<Record<string, unknown>>(`${dir}/${base}.opts.json`) : {},
    };
  });
}
