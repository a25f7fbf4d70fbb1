// The web view (services/ui, @choreo/ui) under /ui/: static files served
// before authentication, like a login page — the page holds no data; every
// API call it makes carries the user's bearer token and is authenticated and
// authorized as any other request.
import type { IncomingMessage, ServerResponse } from "node:http";
import { isUiPath, serveUi } from "@choreo/ui/serve";

/** Whether a path is the web view's: `/ui` and everything under `/ui/`. */
export function isWebViewPath(pathname: string): boolean {
  return isUiPath(pathname);
}

/** Serves the web view's files (GET/HEAD; index.html for unknown sub-paths; built on first use when missing). */
export function serveWebView(req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
  return serveUi(req, res, url.pathname);
}
