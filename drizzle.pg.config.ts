import { defineConfig } from "drizzle-kit";

// The PostgreSQL twin of drizzle.config.ts (`[database] url`); `bun run db:generate` runs both.
export default defineConfig({
  dialect: "postgresql",
  schema: "./src/store/schema/postgres.ts",
  out: "./drizzle-pg",
});
