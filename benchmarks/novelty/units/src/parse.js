'use strict';

const PATTERN = /^\s*(-?\d+(?:\.\d+)?)\s*([a-z]+)\s*$/i;

function parseQuantity(text) {
  const match = PATTERN.exec(text);
  if (!match) {
    throw new SyntaxError(`not a quantity: ${JSON.stringify(text)}`);
  }
  return { value: Number(match[1]), unit: match[2].toLowerCase() };
}

module.exports = { parseQuantity };
