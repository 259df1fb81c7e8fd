// The database's life outside the owners' tables, for the server's start and the CLI's commands
// that act on the database as a whole (migrate, migrate-db, serve): what the rest of the code may
// call, so that nothing above src/store/ names an engine's plumbing (tests/architecture/imports.test.ts).
export { dropPageCache, ensureDatabaseFolder, migrate, openDatabase, openDatabaseReadOnly, pendingMigrations, refuseNewerSchema, type Db } from "./engine/sqlite/client.ts";
export { acquireServeLock, ServeLockError } from "./engine/sqlite/serve-lock.ts";
export { isPostgresUrl, migratePostgres, openPostgres, postgresSchemaBehind, redactUrl } from "./engine/postgres/client.ts";
export { copyToPostgres } from "./engine/copy-to-postgres.ts";
