// What every command shares: its input/output, the global flags, and a lazily
// resolved connection (a command that fails on its flags never reads a kubeconfig).
import { parseArgs, type ParseArgsConfig } from "node:util";
import { CliError, RestClient } from "./client.js";
import { resolveConnection, type Connection } from "./kubeconfig.js";
import { Resources } from "./resources.js";

/** Somewhere to write (process.stdout, or a buffer in tests). */
export interface Output {
  write(s: string): unknown;
}

/** The world a command runs in: injectable so tests run the CLI in-process. */
export interface CliIo {
  stdout: Output;
  stderr: Output;
  env: Record<string, string | undefined>;
  cwd: string;
  /** Reads all of standard input (for `-f -`). */
  stdin?: () => Promise<string>;
  /** Ends watches (Ctrl-C in the real command). */
  signal?: AbortSignal;
}

/** Flags every command accepts (kubectl's global flags). */
export const GLOBAL_OPTIONS = {
  kubeconfig: { type: "string" },
  context: { type: "string" },
  server: { type: "string", short: "s" },
  token: { type: "string" },
  namespace: { type: "string", short: "n" },
  "insecure-skip-tls-verify": { type: "boolean" },
  help: { type: "boolean", short: "h" },
} as const;

/** Global flags that take a value (so `choreo -n x get` finds `get` as the command). */
export const GLOBAL_VALUE_FLAGS = new Set(["--kubeconfig", "--context", "--server", "-s", "--token", "--namespace", "-n"]);

export interface GlobalValues {
  kubeconfig?: string;
  context?: string;
  server?: string;
  token?: string;
  namespace?: string;
  "insecure-skip-tls-verify"?: boolean;
}

type Flags<T extends ParseArgsConfig["options"]> = ReturnType<typeof parseArgs<{ args: string[]; options: T; allowPositionals: true; strict: true }>>;

/** parseArgs with positionals allowed; its errors become kubectl-like usage errors. */
export function parseFlags<T extends NonNullable<ParseArgsConfig["options"]>>(argv: string[], options: T): Flags<T> {
  try {
    return parseArgs({ args: argv, options, allowPositionals: true, strict: true });
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    const unknown = /Unknown option '([^']+)'/.exec(e.message);
    if (unknown) throw new CliError(`error: unknown flag: ${unknown[1]}`);
    const missing = /Option '([^']+)' argument missing/.exec(e.message);
    if (missing) throw new CliError(`error: flag needs an argument: ${missing[1]}`);
    throw new CliError(`error: ${e.message}`);
  }
}

/** One command run: output helpers plus the connection, client and resource resolver, made on first use. */
export class Session {
  private connection: Connection | undefined;
  private restClient: RestClient | undefined;
  private resolver: Resources | undefined;

  constructor(
    readonly io: CliIo,
    private readonly flags: GlobalValues,
  ) {}

  /** Prints a line on stdout. */
  out(line: string): void {
    this.io.stdout.write(`${line}\n`);
  }

  /** Prints a line on stderr. */
  err(line: string): void {
    this.io.stderr.write(`${line}\n`);
  }

  get conn(): Connection {
    this.connection ??= resolveConnection(
      {
        kubeconfig: this.flags.kubeconfig,
        context: this.flags.context,
        server: this.flags.server,
        token: this.flags.token,
        namespace: this.flags.namespace,
        insecureSkipTlsVerify: this.flags["insecure-skip-tls-verify"],
      },
      this.io.env,
      this.io.cwd,
    );
    return this.connection;
  }

  get client(): RestClient {
    this.restClient ??= new RestClient(this.conn);
    return this.restClient;
  }

  get resources(): Resources {
    this.resolver ??= new Resources(this.client);
    return this.resolver;
  }

  /** The namespace commands act in (`-n`, else the context's, else `default`). */
  get namespace(): string {
    return this.conn.namespace;
  }
}

/** A subcommand: parses its own argv (global flags included) and returns the exit code. */
export interface Command {
  name: string;
  summary: string;
  run(argv: string[], io: CliIo): Promise<number>;
}
