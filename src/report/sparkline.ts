/** A compact unicode sparkline: `▁▂▄▇█▆▃`. Non-finite values show as a space. */
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

/** Averages consecutive values down to at most `width` points. */
function resample(values: readonly number[], width: number): number[] {
  if (values.length <= width) return [...values];
  const out: number[] = [];
  for (let i = 0; i < width; i++) {
    const a = Math.floor((i * values.length) / width);
    const b = Math.floor(((i + 1) * values.length) / width);
    let sum = 0;
    let n = 0;
    for (let j = a; j < b; j++) {
      if (Number.isFinite(values[j])) {
        sum += values[j]!;
        n++;
      }
    }
    out.push(n > 0 ? sum / n : NaN);
  }
  return out;
}
