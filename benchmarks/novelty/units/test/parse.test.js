'use strict';
const { describe, it } = require('node:test');
const assert = require('node:assert');
const { parseQuantity } = require('../src/parse');

describe('parseQuantity', () => {
  it('parses integers', () => assert.deepStrictEqual(parseQuantity('12 km'), { value: 12, unit: 'km' }));
  it('parses decimals', () => assert.deepStrictEqual(parseQuantity('1.5m'), { value: 1.5, unit: 'm' }));
  it('parses negatives', () => assert.deepStrictEqual(parseQuantity('-3 C'), { value: -3, unit: 'c' }));
  it('ignores spaces', () => assert.deepStrictEqual(parseQuantity('  7   ft '), { value: 7, unit: 'ft' }));
  it('error on text', () => assert.throws(() => parseQuantity('twelve km'), SyntaxError));
  it('error on a missing unit', () => assert.throws(() => parseQuantity('12'), /not a quantity/));
});
