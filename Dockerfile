# Build: one self-contained binary that carries its migrations.
FROM oven/bun:1.4 AS build
WORKDIR /src
COPY package.json bun.lock ./
RUN bun install --frozen-lockfile
COPY . .
RUN bun run typecheck && bun build --compile --minify src/cli/main.ts --outfile /out/gateway

# Run: a small base, a non-root user, the database on a volume.
FROM debian:bookworm-slim
RUN useradd --system --uid 10001 --home /data gateway && mkdir -p /data && chown gateway /data
COPY --from=build /out/gateway /usr/local/bin/gateway
USER gateway
WORKDIR /data
VOLUME ["/data"]
ENV PORT=8080
EXPOSE 8080
ENTRYPOINT ["gateway"]
CMD ["serve", "--db", "/data/gateway.db"]
