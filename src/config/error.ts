/** A config file the gateway refuses to start with: the message names the file, the field and why. */
export class ConfigError extends Error {}
