import { setDefaultTimeout } from "bun:test";

// bunfig.toml's [test] timeout is not applied by Bun 1.4.5: a slow integration test on a loaded
// 2-core machine stopped at 5 s. Every test file gets 30 s unless it says otherwise.
setDefaultTimeout(30_000);
