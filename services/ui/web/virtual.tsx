// A virtualized list of rows of known heights: only the rows in (or near)
// the viewport are in the DOM, so 5,000 nodes cost what 30 do.
import type { ComponentChildren } from "preact";
import { useEffect, useRef, useState } from "preact/hooks";

export interface VirtualListProps {
  count: number;
  /** Height in px of row i. */
  height(i: number): number;
  row(i: number): ComponentChildren;
  label: string;
  /** Told the list's inner width (rows may depend on it). */
  onWidth?(w: number): void;
}

const OVERSCAN = 600;

export function VirtualList(p: VirtualListProps) {
  const ref = useRef<HTMLDivElement>(null);
  const [view, setView] = useState({ top: 0, height: 800 });
  useEffect(() => {
    const el = ref.current!;
    const update = () => setView({ top: el.scrollTop, height: el.clientHeight });
    const ro = new ResizeObserver(() => {
      update();
      p.onWidth?.(el.clientWidth);
    });
    ro.observe(el);
    el.addEventListener("scroll", update, { passive: true });
    return () => {
      ro.disconnect();
      el.removeEventListener("scroll", update);
    };
  }, []);
  // Prefix sums of the heights: offsets[i] is row i's top.
  const offsets = new Float64Array(p.count + 1);
  for (let i = 0; i < p.count; i++) offsets[i + 1] = offsets[i]! + p.height(i);
  const first = Math.max(0, search(offsets, view.top - OVERSCAN) - 1);
  const last = Math.min(p.count, search(offsets, view.top + view.height + OVERSCAN) + 1);
  const rows = [];
  for (let i = first; i < last; i++) {
    rows.push(
      <div key={i} role="listitem" aria-setsize={p.count} aria-posinset={i + 1} class="vrow" style={{ top: `${offsets[i]}px`, height: `${p.height(i)}px` }}>
        {p.row(i)}
      </div>,
    );
  }
  return (
    <div ref={ref} class="scroller" tabIndex={0} aria-label={p.label}>
      <div role="list" aria-label={p.label} class="vspace" style={{ height: `${offsets[p.count]}px` }}>
        {rows}
      </div>
    </div>
  );
}

/** The last index i with offsets[i] <= y. */
function search(offsets: Float64Array, y: number): number {
  let lo = 0;
  let hi = offsets.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (offsets[mid]! <= y) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}
