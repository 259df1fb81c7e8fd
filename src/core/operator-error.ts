/**
 * A fault of the installation that the operator must fix (a port in use, a folder that cannot be
 * created, a file that is not a database, a second server on one database): the CLI prints its
 * message as one line and exits non-zero, never a stack trace.
 */
export class OperatorError extends Error {}
