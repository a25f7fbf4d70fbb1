// The `choreo` command line: finds the subcommand (global flags may come
// first: `choreo -n kube-system get pods`), runs it, turns errors into
// kubectl-like messages and an exit code.
import { formatError } from "./client.js";
import { COMMANDS, findCommand } from "./commands/index.js";
import { GLOBAL_VALUE_FLAGS, type CliIo } from "./session.js";
import { downCommand, upCommand } from "./up/index.js";
import { joinCommand } from "./join/command.js";

const LOCAL_COMMANDS = [
  ["up", "Bring up a local cluster in the foreground"],
  ["down", "Stop the local cluster"],
  ["join", "Join this machine to a cluster as a node (bootstrap token)"],
] as const;

function usage(): string {
  const rows = [...COMMANDS.map((c) => [c.name, c.summary] as const), ...LOCAL_COMMANDS];
  const width = Math.max(...rows.map(([n]) => n.length)) + 3;
  return `choreo — a container cluster manager (a Kubernetes-compatible API, and a small kubectl)

Usage: choreo <command> [flags]

Commands:
${rows.map(([n, s]) => `  ${n.padEnd(width)}${s}`).join("\n")}

Global flags:
      --kubeconfig=''   kubeconfig file (else $KUBECONFIG, .choreo/kubeconfig, ~/.kube/config)
      --context=''      kubeconfig context to use
  -s, --server=''       API server address (overrides the kubeconfig)
      --token=''        bearer token (overrides the kubeconfig)
  -n, --namespace=''    namespace (default: the context's, else default)
      --insecure-skip-tls-verify

Use "choreo <command> --help" for more information about a command.`;
}

/** Splits argv into the subcommand and its arguments (global flags before it are kept). */
export function splitCommand(argv: string[]): { command: string | undefined; args: string[] } {
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i] ?? "";
    if (a === "--") break;
    if (a.startsWith("-")) {
      if (GLOBAL_VALUE_FLAGS.has(a)) i++;
      continue;
    }
    return { command: a, args: [...argv.slice(0, i), ...argv.slice(i + 1)] };
  }
  return { command: undefined, args: argv };
}

function defaultIo(): CliIo {
  return { stdout: process.stdout, stderr: process.stderr, env: process.env, cwd: process.cwd() };
}

/** Runs the CLI in-process with the given I/O (tests pass buffers and an env); returns the exit code. */
export async function runCli(argv: string[], partial: Partial<CliIo> = {}): Promise<number> {
  const io: CliIo = { ...defaultIo(), ...partial };
  const { command, args } = splitCommand(argv);
  const out = (s: string): void => void io.stdout.write(`${s}\n`);
  try {
    switch (command) {
      case "up":
        return await upCommand(args, out, io.stdout, io.env);
      case "down":
        return await downCommand(args, out);
      case "join":
        return await joinCommand(args, out);
      case undefined:
      case "help": {
        const topic = command === "help" ? args.find((a) => !a.startsWith("-")) : undefined;
        const c = topic ? findCommand(topic) : undefined;
        if (c) return await c.run(["--help"], io);
        out(usage());
        return command === undefined && args.length > 0 && !args.includes("--help") && !args.includes("-h") ? 1 : 0;
      }
      default: {
        const c = findCommand(command);
        if (!c) {
          io.stderr.write(`error: unknown command "${command}" for "choreo"\nRun 'choreo --help' for usage.\n`);
          return 1;
        }
        return await c.run(args, io);
      }
    }
  } catch (err) {
    io.stderr.write(`${formatError(err)}\n`);
    return 1;
  }
}

/** The entry point of bin/choreo.js: argv without node and the script. */
export async function main(argv: string[]): Promise<number> {
  // up/down/join handle their own signals (a graceful stop).
  const { command } = splitCommand(argv);
  if (command === "up" || command === "down" || command === "join") return runCli(argv);
  // Ctrl-C ends a watch cleanly; anything else still running is cut shortly after.
  const ac = new AbortController();
  const stop = (): void => {
    ac.abort();
    setTimeout(() => process.exit(130), 200).unref();
  };
  process.once("SIGINT", stop);
  process.once("SIGTERM", stop);
  try {
    return await runCli(argv, { signal: ac.signal });
  } finally {
    process.off("SIGINT", stop);
    process.off("SIGTERM", stop);
  }
}
