// Which Pod Security level applies where: the namespace's
// pod-security.kubernetes.io/<mode> labels over the api's defaults, as
// Kubernetes' pod-security-admission api.PolicyToEvaluate.
import type { StatusCause } from "@choreo/kit";
import { fieldError } from "@choreo/kit";

export const LEVELS = ["privileged", "baseline", "restricted"] as const;
export type Level = (typeof LEVELS)[number];
export const MODES = ["enforce", "audit", "warn"] as const;
export type Mode = (typeof MODES)[number];

/** A level at a version (`latest`, or `v1.N`: every version is evaluated as latest). */
export interface LevelVersion {
  level: Level;
  version: string;
}

export type Policy = Record<Mode, LevelVersion>;

/** The api's Pod Security Admission configuration (Kubernetes' PodSecurityConfiguration). */
export interface PodSecurityConfig {
  /** The levels of a namespace without labels. */
  defaults: Record<Mode, Level>;
  /** Users whose requests are not checked (Kubernetes' exemptions.usernames). */
  exemptUsernames: string[];
  /** Namespaces whose pods are not checked (Kubernetes' exemptions.namespaces). */
  exemptNamespaces: string[];
}

export const DEFAULT_POD_SECURITY: PodSecurityConfig = {
  defaults: { enforce: "baseline", audit: "baseline", warn: "baseline" },
  exemptUsernames: [],
  exemptNamespaces: ["kube-system"],
};

export const LABEL_PREFIX = "pod-security.kubernetes.io/";
export const levelLabel = (mode: Mode): string => `${LABEL_PREFIX}${mode}`;
export const versionLabel = (mode: Mode): string => `${LABEL_PREFIX}${mode}-version`;

const LEVEL_ERROR = `must be one of ${LEVELS.join(", ")}`;
const VERSION_ERROR = `must be "latest" or "v1.x"`;

export function isLevel(v: string): v is Level {
  return (LEVELS as readonly string[]).includes(v);
}

export function compareLevels(a: Level, b: Level): number {
  return LEVELS.indexOf(a) - LEVELS.indexOf(b);
}

/** `baseline:latest`, as Kubernetes names a policy in its messages. */
export function policyName(lv: LevelVersion): string {
  return `${lv.level}:${lv.version}`;
}

/**
 * The policy of a namespace with `labels`, and the field errors of its
 * pod-security labels (an unknown level or version). A warn level not set
 * follows an enforce level set stricter, as Kubernetes does.
 */
export function policyOf(labels: Record<string, string>, defaults: Record<Mode, Level>): { policy: Policy; errors: StatusCause[] } {
  const policy: Policy = {
    enforce: { level: defaults.enforce, version: "latest" },
    audit: { level: defaults.audit, version: "latest" },
    warn: { level: defaults.warn, version: "latest" },
  };
  const errors: StatusCause[] = [];
  const invalid = (label: string, value: string, why: string): void => {
    errors.push(fieldError(`metadata.labels[${label}]`, "FieldValueInvalid", `Invalid value: ${JSON.stringify(value)}: ${why}`));
  };
  const levelSet: Partial<Record<Mode, boolean>> = {};
  for (const mode of MODES) {
    const level = labels[levelLabel(mode)];
    if (level !== undefined) {
      if (isLevel(level)) {
        policy[mode].level = level;
        levelSet[mode] = true;
      } else invalid(levelLabel(mode), level, LEVEL_ERROR);
    }
    const version = labels[versionLabel(mode)];
    if (version !== undefined) {
      if (version === "latest" || /^v1\.(0|[1-9][0-9]*)$/.test(version)) policy[mode].version = version;
      else invalid(versionLabel(mode), version, VERSION_ERROR);
    }
  }
  if (!levelSet.warn && levelSet.enforce && compareLevels(policy.enforce.level, policy.warn.level) > 0) {
    policy.warn.level = policy.enforce.level;
    if (labels[versionLabel("warn")] === undefined) policy.warn.version = policy.enforce.version;
  }
  return { policy, errors };
}

function level(env: NodeJS.ProcessEnv, name: string, dflt: Level): Level {
  const v = env[name];
  if (v === undefined || v === "") return dflt;
  if (!isLevel(v)) throw new Error(`${name} must be one of ${LEVELS.join(", ")}, got ${JSON.stringify(v)}`);
  return v;
}

const list = (v: string | undefined, dflt: string[]): string[] =>
  v === undefined
    ? dflt
    : v
        .split(",")
        .map((s) => s.trim())
        .filter(Boolean);

/**
 * The configuration from CHOREO_POD_SECURITY_* variables: DEFAULT_ENFORCE
 * (baseline), DEFAULT_WARN and DEFAULT_AUDIT (the enforce default),
 * EXEMPT_USERNAMES (none) and EXEMPT_NAMESPACES (kube-system), comma-separated.
 */
export function podSecurityConfigFromEnv(env: NodeJS.ProcessEnv): PodSecurityConfig {
  const enforce = level(env, "CHOREO_POD_SECURITY_DEFAULT_ENFORCE", DEFAULT_POD_SECURITY.defaults.enforce);
  return {
    defaults: {
      enforce,
      warn: level(env, "CHOREO_POD_SECURITY_DEFAULT_WARN", enforce),
      audit: level(env, "CHOREO_POD_SECURITY_DEFAULT_AUDIT", enforce),
    },
    exemptUsernames: list(env["CHOREO_POD_SECURITY_EXEMPT_USERNAMES"], DEFAULT_POD_SECURITY.exemptUsernames),
    exemptNamespaces: list(env["CHOREO_POD_SECURITY_EXEMPT_NAMESPACES"], DEFAULT_POD_SECURITY.exemptNamespaces),
  };
}
