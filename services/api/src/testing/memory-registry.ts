import { randomBytes } from "node:crypto";
import { bindRequest, type ListOptions, type PatchType } from "@choreo/kit/client";
import { Object as ObjectMsg, ObjectList as ObjectListMsg, type Object as ApiObject, type ObjectList } from "@choreo/kit/gen/choreo/api/v1/api";
import { Scale as ScaleMsg, type Scale } from "@choreo/kit/gen/choreo/autoscaling/v1/autoscaling";
import type { DeleteOptions } from "@choreo/kit/gen/choreo/meta/v1/meta";
import { emptyMeta } from "@choreo/kit";
import { silentLogger } from "@choreo/kit/log";
import { bootstrap, createRegistry, SecretSealer, type Registry } from "../registry/index.js";
import { MemoryStore } from "../storage/memory-store.js";
import { NO_SCOPE, type RequestScope } from "../registry/generic/request-scope.js";

/** A registry over the in-memory storage: no server, no transport. */
export interface MemoryRegistry {
  storage: MemoryStore;
  registry: Registry;
  /** The calls of kit's ApiClient, answered by the registry in this process. */
  client: LocalClient;
}

/** A bootstrapped registry (system namespaces) over a fresh MemoryStore, for hermetic tests. */
export async function startMemoryRegistry(opts: { serviceCidr?: string } = {}): Promise<MemoryRegistry> {
  const storage = new MemoryStore();
  // Secrets sealed at rest as in the api, under a random key.
  const encryption = new SecretSealer([{ name: "test", secret: randomBytes(32) }]);
  const registry = createRegistry({ store: storage, serviceCidr: opts.serviceCidr ?? "10.96.0.0/16", log: silentLogger(), encryption });
  await bootstrap(registry);
  return { storage, registry, client: new LocalClient(registry) };
}

/**
 * kit's ApiClient without NATS: the same method signatures, each reply
 * through a protobuf round trip as the transport would send it.
 */
export class LocalClient {
  constructor(
    private readonly registry: Registry,
    /** What each write hands the registry beside its request (a door's admission context). */
    private readonly scope: RequestScope = NO_SCOPE,
  ) {}

  /** This client writing with `scope`, as a door with that admission context would. */
  as(scope: RequestScope): LocalClient {
    return new LocalClient(this.registry, scope);
  }

  async get(resource: string, namespace: string, name: string): Promise<ApiObject> {
    return object(await this.registry.get({ resource, namespace, name }));
  }

  async list(resource: string, opts: ListOptions = {}): Promise<ObjectList> {
    return list(
      await this.registry.list({
        resource,
        namespace: opts.namespace ?? "",
        labelSelector: opts.labelSelector ?? "",
        fieldSelector: opts.fieldSelector ?? "",
        limit: opts.limit ?? 0,
        continue: opts.continue ?? "",
      }),
    );
  }

  async create(o: ApiObject, dryRun = false): Promise<ApiObject> {
    return object(await this.registry.create({ object: object(o), dryRun }, this.scope));
  }

  async update(o: ApiObject): Promise<ApiObject> {
    return object(await this.registry.update({ object: object(o), dryRun: false }, this.scope));
  }

  async updateStatus(o: ApiObject): Promise<ApiObject> {
    return object(await this.registry.updateStatus({ object: object(o), dryRun: false }, this.scope));
  }

  async patch(resource: string, namespace: string, name: string, patchType: PatchType, patch: unknown, subresource = ""): Promise<ApiObject> {
    return object(await this.registry.patch({ resource, namespace, name, patchType, patch: JSON.stringify(patch), subresource }, this.scope));
  }

  async delete(resource: string, namespace: string, name: string, options?: Partial<DeleteOptions>): Promise<ApiObject> {
    const opts = options ? { gracePeriodSeconds: undefined, preconditions: undefined, propagationPolicy: "", dryRun: [], ...options } : undefined;
    return object(await this.registry.delete({ resource, namespace, name, options: opts }, this.scope));
  }

  async bind(namespace: string, name: string, node: string, uid = ""): Promise<ApiObject> {
    return object(await this.registry.bind(bindRequest(namespace, name, node, uid), this.scope));
  }

  async getScale(resource: string, namespace: string, name: string): Promise<Scale> {
    return scale(await this.registry.getScale({ resource, namespace, name }));
  }

  async updateScale(resource: string, namespace: string, name: string, replicas: number, resourceVersion = ""): Promise<Scale> {
    return scale(
      await this.registry.updateScale(
        {
          resource,
          namespace,
          name,
          scale: {
            apiVersion: "autoscaling/v1",
            kind: "Scale",
            metadata: emptyMeta({ name, namespace, resourceVersion }),
            spec: { replicas },
            status: undefined,
          },
        },
        this.scope,
      ),
    );
  }
}

const object = (o: ApiObject): ApiObject => ObjectMsg.decode(ObjectMsg.encode(o).finish());
const list = (l: ObjectList): ObjectList => ObjectListMsg.decode(ObjectListMsg.encode(l).finish());
const scale = (s: Scale): Scale => ScaleMsg.decode(ScaleMsg.encode(s).finish());
