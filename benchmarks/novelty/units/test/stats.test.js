'use strict';
const { describe, it } = require('node:test');
const assert = require('node:assert');
const { mean, median, histogram } = require('../src/stats');

describe('mean', () => {
  it('of integers', () => assert.strictEqual(mean([1, 2, 3, 4]), 2.5));
  it('of one value', () => assert.strictEqual(mean([7]), 7));
  it('of negatives', () => assert.strictEqual(mean([-1, -3]), -2));
  it('error on empty input', () => assert.throws(() => mean([]), RangeError));
});

describe('median', () => {
  it('odd count', () => assert.strictEqual(median([5, 1, 3]), 3));
  it('even count', () => assert.strictEqual(median([4, 1, 3, 2]), 2.5));
  it('does not sort its input', () => {
    const xs = [3, 1, 2];
    median(xs);
    assert.deepStrictEqual(xs, [3, 1, 2]);
  });
  it('error on empty input', () => assert.throws(() => median([]), /median of nothing/));
});

describe('histogram', () => {
  it('bins by width', () => assert.deepStrictEqual(histogram([1, 2, 11, 12, 13], 10), [[0, 2], [10, 3]]));
  it('sorts bins', () => assert.deepStrictEqual(histogram([25, 5], 10), [[0, 1], [20, 1]]));
  it('empty input', () => assert.deepStrictEqual(histogram([], 10), []));
});
