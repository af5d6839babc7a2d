/** A compact unicode sparkline: `▁▂▄▇█▆▃`. Non-finite values show as a space. */
import { resample } from '../stats/rolling.js';

const BARS = '▁▂▃▄▅▆▇█';

export function sparkline(values: readonly number[], width = 32): string {
  const xs = resample(values, width);
  const finite = xs.filter(Number.isFinite);
  if (finite.length === 0) return '';
  const lo = Math.min(...finite);
  const hi = Math.max(...finite);
  const span = hi - lo;
  return xs
    .map((x) => {
      if (!Number.isFinite(x)) return ' ';
      const i = span === 0 ? 3 : Math.round(((x - lo) / span) * (BARS.length - 1));
      return BARS[i];
    })
    .join('');
}
