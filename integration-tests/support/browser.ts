// A real browser for the web view's test and benchmark: Debian's chromium
// (scripts/ensure-deps.sh --test installs it) driven by puppeteer-core,
// headless. No browser is downloaded: without the system binary, skip.
import { existsSync } from "node:fs";
import puppeteer, { type Browser } from "puppeteer-core";

/** The system chromium's path, or undefined when it is not installed. */
export const CHROMIUM: string | undefined = ["/usr/bin/chromium", "/usr/bin/chromium-browser"].find((p) => existsSync(p));

/**
 * Launches the system's chromium headless (as root: without its sandbox).
 * Given 90 s to print its DevTools endpoint and launched once more if it
 * does not: in a CI run on 2 busy cores one launch never printed it within
 * puppeteer's default 30 s (the test's cluster was fine), failing the file.
 */
export async function launchChromium(viewport = { width: 1200, height: 900 }): Promise<Browser> {
  if (!CHROMIUM) throw new Error("chromium is not installed (apt-get install chromium)");
  const launch = () =>
    puppeteer.launch({
      executablePath: CHROMIUM,
      headless: true,
      args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
      defaultViewport: viewport,
      timeout: 90_000,
    });
  try {
    return await launch();
  } catch (err) {
    if (!(err instanceof Error && /Timed out/.test(err.message))) throw err;
    return launch();
  }
}
