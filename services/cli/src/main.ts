import { downCommand, upCommand } from "./up/index.js";

const USAGE = `choreo — a container cluster manager

Usage: choreo <command> [flags]

Commands:
  up        bring up a local cluster in the foreground
  down      stop the local cluster`;

/** Runs the CLI with argv (without node and script); returns the exit code. */
export async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  try {
    switch (command) {
      case "up":
        return await upCommand(rest);
      case "down":
        return await downCommand(rest);
      case undefined:
      case "help":
      case "--help":
      case "-h":
        console.log(USAGE);
        return 0;
      default:
        console.error(`error: unknown command "${command}" for "choreo"\n\n${USAGE}`);
        return 1;
    }
  } catch (err) {
    console.error(`error: ${(err as Error).message}`);
    return 1;
  }
}
