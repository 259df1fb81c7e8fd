// Another revision's tree beside this one, for the interleaved A/B scripts (bench/ab.ts,
// bench/ab-streams.ts): checked out into a temporary git worktree that borrows this tree's
// node_modules, removed with its directory by `remove`.
import { mkdtempSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ROOT } from "./rig.ts";

const git = (...args: string[]) => {
  const r = Bun.spawnSync(["git", ...args], { cwd: ROOT });
  if (r.exitCode !== 0) throw new Error(`git ${args.join(" ")}: ${r.stderr.toString()}`);
  return r.stdout.toString().trim();
};

export interface BaseTree {
  /** the temporary directory; each side's rig may keep its files under it */
  dir: string;
  /** the base revision's source tree */
  root: string;
  /** the revision, short */
  rev: string;
  remove(): void;
}

export function checkoutBase(base: string): BaseTree {
  const dir = mkdtempSync(join(tmpdir(), "gw-ab-"));
  const root = join(dir, "base");
  const rev = git("rev-parse", "--short", base);
  git("worktree", "add", "--detach", root, rev);
  symlinkSync(join(ROOT, "node_modules"), join(root, "node_modules"));
  return {
    dir,
    root,
    rev,
    remove() {
      git("worktree", "remove", "--force", root);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
