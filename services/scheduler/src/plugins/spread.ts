import type { Scorer } from "../framework.js";

/** Spreads the pods of one controller: fewer of its pods on the node is better (normalised to 0..100). */
export const spread: Scorer = {
  name: "SelectorSpread",
  weight: 2,
  score(pod, n) {
    return pod.owner ? (n.owners.get(pod.owner) ?? 0) : 0;
  },
  normalize(scores) {
    const max = Math.max(0, ...scores);
    for (let i = 0; i < scores.length; i++) scores[i] = max === 0 ? 100 : (100 * (max - scores[i]!)) / max;
  },
};
