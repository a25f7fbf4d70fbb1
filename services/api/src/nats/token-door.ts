import type { Msg, NatsConnection, Subscription } from "@nats-io/transport-node";
import { badRequest, statusOf } from "@choreo/kit";
import { apiSubject, drainSubscriptions } from "@choreo/kit/bus";
import { CREATE_TOKEN, type CreateTokenReply, type CreateTokenRequest, type TokenRequestJson } from "@choreo/kit/client";
import { onAbort, type Runnable } from "@choreo/kit/lifecycle";
import type { Logger } from "@choreo/kit/log";
import { resourceAttributes } from "../auth/attributes.js";
import type { ApiHandlers } from "../handlers/api-handlers.js";
import { requestToken, type TokenIssuer } from "../registry/serviceaccounts/tokenrequest.js";
import { admitNatsRequest, type NatsRequestAuth } from "./request-auth.js";
import { API_QUEUE } from "./serve-nats.js";

const SERVICEACCOUNTS = { group: "", version: "v1", resource: "serviceaccounts" };

/**
 * `choreo.api.createToken` (the kit's `ApiClient.createToken`): the HTTP
 * door's TokenRequest (`POST .../serviceaccounts/NAME/token`) over NATS, for
 * node agents writing pods' projected ServiceAccount tokens. JSON both ways
 * (`{namespace, name, tokenRequest}` → `{tokenRequest}` or `{status}`: the
 * api's Reply has no TokenRequest). Authenticated like every api subject,
 * authorized as `create serviceaccounts/token` on the account, then
 * `requestToken` (registry/serviceaccounts/tokenrequest.ts: 404, 409, 422,
 * and a node's user held to its own pods, 403). The token is never logged.
 */
export class TokenNatsDoor implements Runnable {
  readonly name = "token-nats-door";

  constructor(
    private readonly o: {
      nc: NatsConnection;
      handlers: Pick<ApiHandlers, "get">;
      issuer: TokenIssuer;
      log: Logger;
      onRequest?: (method: string, code: number, seconds: number) => void;
    } & NatsRequestAuth,
  ) {}

  async start(signal: AbortSignal): Promise<void> {
    const sub: Subscription = this.o.nc.subscribe(apiSubject(CREATE_TOKEN), {
      queue: API_QUEUE,
      callback: (err, msg) => {
        if (err) {
          this.o.log.warn({ err, method: CREATE_TOKEN }, "subscription error");
          return;
        }
        void this.serve(msg);
      },
    });
    await this.o.nc.flush();
    await new Promise<void>((resolve) => onAbort(signal, resolve));
    await drainSubscriptions([sub]);
  }

  private async serve(msg: Msg): Promise<void> {
    const started = performance.now();
    let reply: CreateTokenReply;
    let code = 201;
    try {
      reply = { tokenRequest: await this.answer(msg) };
    } catch (err) {
      const status = statusOf(err);
      code = status.code;
      if (code >= 500) this.o.log.error({ err, method: CREATE_TOKEN }, "request failed");
      reply = { status };
    }
    this.o.onRequest?.(CREATE_TOKEN, code, (performance.now() - started) / 1000);
    if (msg.reply) msg.respond(new TextEncoder().encode(JSON.stringify(reply)));
  }

  private async answer(msg: Msg): Promise<TokenRequestJson> {
    let req: Partial<CreateTokenRequest>;
    try {
      req = JSON.parse(new TextDecoder().decode(msg.data)) as Partial<CreateTokenRequest>;
    } catch {
      throw badRequest("createToken: the request is not JSON");
    }
    const { namespace, name, tokenRequest } = req;
    if (typeof namespace !== "string" || typeof name !== "string" || namespace === "" || name === "")
      throw badRequest("createToken: namespace and name (strings) are required");
    const a = await admitNatsRequest(msg, this.o, (user) => resourceAttributes(user, "create", SERVICEACCOUNTS, namespace, name, "token"));
    try {
      const out = (await requestToken(this.o.handlers, this.o.issuer, namespace, name, tokenRequest, a?.user)) as unknown as TokenRequestJson;
      // The audit entry never gets the body: it holds the token.
      a?.entry?.finish({ code: 201 });
      return out;
    } catch (err) {
      const st = statusOf(err);
      a?.entry?.finish({ code: st.code, status: st });
      throw err;
    }
  }
}
