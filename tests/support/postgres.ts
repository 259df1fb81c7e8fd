// A throwaway PostgreSQL for tests: Debian's server binaries, a cluster in a temporary folder, on a
// free loopback port, trust auth, fsync off (nothing here must survive a crash). Started once per
// suite (`startPostgres` in beforeAll), stopped and removed after (`stop` in afterAll).
import { chmodSync, existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort } from "./cli.ts";

export interface TestPostgres {
  /** postgres://…@127.0.0.1:<port>/postgres: a superuser, no password. */
  url: string;
  /** A fresh empty database on the same server, by name; its URL. */
  createDatabase(name: string): Promise<string>;
  /** An outage: the server stops ("fast": its connections are closed), its data and port kept for `resume`. */
  halt(): void;
  /** The server again, on the same data folder and port, as after an outage; resolves once it accepts connections. */
  resume(): void;
  stop(): Promise<void>;
}

const PG_ROOT = "/usr/lib/postgresql";
// initdb and postgres refuse to run as root; CI runs as root, so the cluster belongs to this user.
const RUN_AS = "postgres";

/** Debian's newest installed server's bin folder, or a one-line reason to install it. */
export function postgresBin(): string {
  const versions = existsSync(PG_ROOT) ? readdirSync(PG_ROOT).filter((v) => existsSync(join(PG_ROOT, v, "bin/initdb"))) : [];
  if (versions.length === 0) {
    throw new Error(`PostgreSQL is not installed (no ${PG_ROOT}/*/bin/initdb): apt-get install postgresql (.ci/run does)`);
  }
  const newest = versions.sort((a, b) => Number(b) - Number(a))[0]!;
  return join(PG_ROOT, newest, "bin");
}

/** The command as the cluster's owner: as is when not root, through runuser (util-linux) as root. */
function asOwner(argv: string[]): string[] {
  if (process.getuid?.() !== 0) return argv;
  ensureUser(RUN_AS);
  return ["runuser", "-u", RUN_AS, "--", ...argv];
}

function ensureUser(name: string): void {
  if (Bun.spawnSync(["id", "-u", name]).exitCode === 0) return;
  // Debian's postgresql package creates it; a bare image with only the binaries does not.
  const made = Bun.spawnSync(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", name], { stderr: "pipe" });
  if (made.exitCode !== 0) throw new Error(`cannot create the user ${name} to run PostgreSQL as: ${made.stderr.toString().trim()}`);
}

function run(argv: string[], cwd: string, what: string): void {
  const r = Bun.spawnSync(asOwner(argv), { cwd, stdout: "pipe", stderr: "pipe" });
  if (r.exitCode !== 0) throw new Error(`${what} failed (exit ${r.exitCode}): ${(r.stderr.toString() || r.stdout.toString()).trim()}`);
}

/** `extra`: more server options (`-c name=value …`), e.g. the bench's pg_stat_statements. */
export async function startPostgres(extra = ""): Promise<TestPostgres> {
  const bin = postgresBin();
  const dir = mkdtempSync(join(tmpdir(), "gw-pg-"));
  // The owner must reach the folder (mkdtemp makes it 0700 for root); the data folder inside is its own.
  chmodSync(dir, 0o777);
  const data = join(dir, "data");
  const port = freePort();
  const user = "gateway";
  const options = `-k ${dir} -p ${port} -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off${extra ? ` ${extra}` : ""}`;
  const start = () => run([join(bin, "pg_ctl"), "-D", data, "-o", options, "-l", join(dir, "server.log"), "-w", "-t", "30", "start"], dir, "pg_ctl start");
  try {
    run([join(bin, "initdb"), "-D", data, "-U", user, "-A", "trust", "-E", "UTF8", "--no-sync"], dir, "initdb");
    start();
  } catch (e) {
    rmSync(dir, { recursive: true, force: true });
    throw e;
  }
  const base = `postgres://${user}@127.0.0.1:${port}`;
  let stopped = false;
  let running = true;
  return {
    url: `${base}/postgres`,
    async createDatabase(name) {
      const admin = new Bun.SQL(`${base}/postgres`, { max: 1 });
      try {
        await admin.unsafe(`CREATE DATABASE "${name.replace(/"/g, '""')}"`);
      } finally {
        await admin.close();
      }
      return `${base}/${name}`;
    },
    halt() {
      run([join(bin, "pg_ctl"), "-D", data, "-m", "fast", "-w", "stop"], dir, "pg_ctl stop");
      running = false;
    },
    resume() {
      start();
      running = true;
    },
    async stop() {
      if (stopped) return;
      stopped = true;
      // "immediate": no checkpoint for a cluster about to be deleted.
      try {
        if (running) run([join(bin, "pg_ctl"), "-D", data, "-m", "immediate", "-w", "stop"], dir, "pg_ctl stop");
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  };
}
