'use strict';

function formatQuantity(q, digits = 2) {
  const text = q.value.toFixed(digits).replace(/\.?0+$/, '');
  return `${text} ${q.unit}`;
}

function formatTable(rows) {
  const width = Math.max(...rows.map((r) => r.label.length));
  return rows.map((r) => `${r.label.padEnd(width)}  ${formatQuantity(r.quantity)}`).join('\n');
}

module.exports = { formatQuantity, formatTable };
