import type { Event } from "@choreo/kit/gen/choreo/core/v1/core";
import { nowRfc3339 } from "@choreo/kit/apimachinery";
import type { Strategy } from "../generic/strategy.js";
import { Errors } from "../shared/validation.js";

/** Events: timestamps and count defaulted, an involved object required. */
export const eventStrategy: Strategy<Event> = {
  prepareCreate(ev) {
    const now = nowRfc3339();
    ev.firstTimestamp ||= now;
    ev.lastTimestamp ||= ev.firstTimestamp;
    ev.count ||= 1;
    ev.type ||= "Normal";
  },
  validate(ev) {
    const e = new Errors();
    e.required("involvedObject", ev.involvedObject?.kind || ev.involvedObject?.name);
    e.oneOf("type", ev.type, ["Normal", "Warning"]);
    if (ev.involvedObject?.namespace && ev.metadata && ev.involvedObject.namespace !== ev.metadata.namespace) {
      e.invalid("involvedObject.namespace", ev.involvedObject.namespace, "does not match event.namespace");
    }
    return e.causes;
  },
};
