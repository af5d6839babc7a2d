/**
 * `fn` of a string, remembered: for questions asked of the same few names at every evaluation
 * (is this series a validation score?). A process that met very many names forgets them all
 * rather than grow.
 */
export function memoByName<T>(fn: (name: string) => T, max = 4096): (name: string) => T {
  const known = new Map<string, T>();
  return (name) => {
    if (known.has(name)) return known.get(name)!;
    if (known.size >= max) known.clear();
    const v = fn(name);
    known.set(name, v);
    return v;
  };
}
