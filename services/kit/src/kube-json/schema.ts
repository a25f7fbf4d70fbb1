import { createRequire } from "node:module";
import protobuf from "protobufjs";

/**
 * Field plans per protobuf message, built once from the generated descriptor:
 * what the JSON codec needs to walk a message without reflection per call.
 */
export interface FieldPlan {
  /** ts-proto property name (camelCase). */
  readonly tsName: string;
  /** Kubernetes JSON name (podIP, not podIp). */
  readonly jsonName: string;
  readonly kind: "scalar" | "message" | "map" | "repeated";
  /** Scalar type name (string, int32, int64, bool, …) of the value or element. */
  readonly scalar?: string;
  /** Message type of the value or element. */
  readonly message?: MessagePlan;
  /** proto3 `optional`: presence is kept, zero values are written. */
  readonly optional: boolean;
  /**
   * `[(choreo.meta.v1.always) = true]`: Kubernetes writes the field without
   * `omitempty` (or it is a Go struct, which `omitempty` never drops), so it
   * is emitted at its zero value: 0, false, "", {} for a message, [] / {}.
   */
  readonly always: boolean;
}

export interface MessagePlan {
  readonly fullName: string;
  /** Go-like short name for error messages (PodSpec). */
  readonly name: string;
  readonly fields: FieldPlan[];
  readonly byJson: Map<string, FieldPlan>;
  /** IntOrString is written as a bare number or string. */
  readonly intOrString: boolean;
  /** FieldsV1 (managedFields) is its `raw` bytes' JSON, written and read as that JSON. */
  readonly rawJson: boolean;
}

// Kubernetes spells initialisms in upper case; proto's camelCase does not.
const JSON_NAMES: Record<string, string> = {
  podCidr: "podCIDR",
  podCidrs: "podCIDRs",
  hostIp: "hostIP",
  podIp: "podIP",
  podIps: "podIPs",
  clusterIp: "clusterIP",
  clusterIps: "clusterIPs",
  providerId: "providerID",
  machineId: "machineID",
  imageId: "imageID",
  containerId: "containerID",
  systemUuid: "systemUUID",
  bootId: "bootID",
  nonResourceUrls: "nonResourceURLs",
};

/** The custom field option of proto/choreo/meta/v1/options.proto, as protobufjs names it. */
export const ALWAYS = "(choreo.meta.v1.always)";

function jsonNameOption(f: protobuf.Field): string | undefined {
  const v: unknown = f.options?.["json_name"];
  return typeof v === "string" ? v : undefined;
}

const require = createRequire(import.meta.url);
const descriptor = require("../gen/descriptor.json") as protobuf.INamespace;
const root = protobuf.Root.fromJSON(descriptor);
root.resolveAll();

const plans = new Map<string, MessagePlan>();

/** The plan of a fully qualified message name, e.g. `choreo.core.v1.Pod`. */
export function planOf(fullName: string): MessagePlan {
  const name = fullName.startsWith(".") ? fullName.slice(1) : fullName;
  const existing = plans.get(name);
  if (existing) return existing;
  const type = root.lookupType(name);
  const plan: MessagePlan = {
    fullName: name,
    name: type.name,
    fields: [],
    byJson: new Map(),
    intOrString: name === "choreo.core.v1.IntOrString",
    rawJson: name === "choreo.meta.v1.FieldsV1",
  };
  plans.set(name, plan); // before recursing: messages may refer to themselves
  for (const f of type.fieldsArray) {
    f.resolve();
    const sub = f.resolvedType instanceof protobuf.Type ? planOf(f.resolvedType.fullName) : undefined;
    // `[json_name = "Port"]` where Kubernetes' spelling is not the camelCase one.
    const jsonName = jsonNameOption(f) ?? JSON_NAMES[f.name] ?? f.name;
    const fp: FieldPlan = {
      tsName: f.name,
      jsonName,
      kind: f.map ? "map" : f.repeated ? "repeated" : sub ? "message" : "scalar",
      scalar: sub ? undefined : f.type,
      message: sub,
      optional: Boolean(f.options?.["proto3_optional"]),
      always: f.options?.[ALWAYS] === true,
    };
    plan.fields.push(fp);
    plan.byJson.set(jsonName, fp);
  }
  return plan;
}

/** The zero value ts-proto uses for a scalar type. */
export function zeroOf(scalar: string | undefined): string | number | boolean {
  switch (scalar) {
    case "string":
      return "";
    case "bool":
      return false;
    case "bytes":
      return "";
    default:
      return 0;
  }
}
