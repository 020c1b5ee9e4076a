'use strict';
const { describe, it } = require('node:test');
const assert = require('node:assert');
const { formatQuantity, formatTable } = require('../src/format');

describe('formatQuantity', () => {
  it('drops trailing zeros', () => assert.strictEqual(formatQuantity({ value: 2.5, unit: 'm' }), '2.5 m'));
  it('keeps whole numbers', () => assert.strictEqual(formatQuantity({ value: 3, unit: 'km' }), '3 km'));
  it('rounds to two digits', () => assert.strictEqual(formatQuantity({ value: 1.23456, unit: 'ft' }), '1.23 ft'));
  it('honours digits', () => assert.strictEqual(formatQuantity({ value: 1.23456, unit: 'ft' }, 3), '1.235 ft'));
});

describe('formatTable', () => {
  it('aligns labels', () => {
    const rows = [
      { label: 'a', quantity: { value: 1, unit: 'm' } },
      { label: 'long', quantity: { value: 2, unit: 'm' } },
    ];
    assert.strictEqual(formatTable(rows), 'a     1 m\nlong  2 m');
  });
  it('reports no error on one row', () => {
    assert.doesNotThrow(() => formatTable([{ label: 'x', quantity: { value: 0, unit: 'm' } }]));
  });
});
