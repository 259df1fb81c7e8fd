# Build: one self-contained binary that carries its migrations. The context is filtered by
# .dockerignore (no data/, no database files, no node_modules, no local binary).
FROM oven/bun:1.4 AS build
WORKDIR /src
COPY package.json bun.lock ./
RUN bun install --frozen-lockfile
COPY . .
RUN bun run typecheck && bun build --compile --minify src/cli/main.ts --outfile /out/gateway

# Run: a small base, a non-root user (uid 10001), the database on the /data volume. A bind-mounted
# /data must be writable by that uid (chown 10001 DIR). A config file is mounted read-only and named
# by GATEWAY_CONFIG, e.g. -v ./gateway.toml:/etc/gateway/gateway.toml:ro -e GATEWAY_CONFIG=/etc/gateway/gateway.toml
FROM debian:bookworm-slim
RUN useradd --system --uid 10001 --home /data gateway && mkdir -p /data && chown gateway /data
COPY --from=build /out/gateway /usr/local/bin/gateway
USER gateway
WORKDIR /data
VOLUME ["/data"]
# PORT beats the config file's [server] port, and `gateway healthcheck` reads it too.
ENV PORT=8080
# Bun's fetch runs 256 requests at once and queues the rest silently: a stream holds its slot for
# minutes, so the 257th client would wait with no byte. Read once at start, hence here.
ENV BUN_CONFIG_MAX_HTTP_REQUESTS=4096
EXPOSE 8080
# No curl in this image: the binary asks its own GET /healthz on loopback and prints one line if it
# is not 200. The shell form turns the CLI's exit code 2 (which Docker reserves) into 1.
HEALTHCHECK --interval=30s --timeout=5s --start-period=15s --retries=3 CMD gateway healthcheck || exit 1
# SIGTERM drains requests in flight for up to [server] shutdown_timeout_s (30 s by default): give
# `docker stop` more than that (--stop-timeout 40, or stop_grace_period in compose).
STOPSIGNAL SIGTERM
ENTRYPOINT ["gateway"]
CMD ["serve", "--db", "/data/gateway.db"]
