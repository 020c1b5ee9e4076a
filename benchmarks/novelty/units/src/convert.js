'use strict';

const LENGTH = { mm: 0.001, cm: 0.01, m: 1, km: 1000, in: 0.0254, ft: 0.3048, mi: 1609.344 };

function convertLength(value, from, to) {
  if (!(from in LENGTH) || !(to in LENGTH)) {
    throw new RangeError(`unknown unit: ${from in LENGTH ? to : from}`);
  }
  return (value * LENGTH[from]) / LENGTH[to];
}

function celsiusToFahrenheit(c) {
  return (c * 9) / 5 + 32;
}

function fahrenheitToCelsius(f) {
  return ((f - 32) * 5) / 9;
}

module.exports = { LENGTH, convertLength, celsiusToFahrenheit, fahrenheitToCelsius };
