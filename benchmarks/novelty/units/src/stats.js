'use strict';

function mean(xs) {
  if (xs.length === 0) throw new RangeError('mean of nothing');
  return xs.reduce((a, b) => a + b, 0) / xs.length;
}

function median(xs) {
  if (xs.length === 0) throw new RangeError('median of nothing');
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

function histogram(xs, width) {
  const bins = new Map();
  for (const x of xs) {
    const key = Math.floor(x / width) * width;
    bins.set(key, (bins.get(key) || 0) + 1);
  }
  return [...bins.entries()].sort((a, b) => a[0] - b[0]);
}

module.exports = { mean, median, histogram };
