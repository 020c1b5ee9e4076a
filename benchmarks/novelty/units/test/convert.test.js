'use strict';
const test = require('node:test');
const assert = require('node:assert');
const { convertLength, celsiusToFahrenheit, fahrenheitToCelsius } = require('../src/convert');

test('km to m', () => assert.strictEqual(convertLength(2, 'km', 'm'), 2000));
test('m to cm', () => assert.strictEqual(convertLength(1.5, 'm', 'cm'), 150));
test('mi to km', () => assert.ok(Math.abs(convertLength(1, 'mi', 'km') - 1.609344) < 1e-9));
test('ft to in', () => assert.ok(Math.abs(convertLength(1, 'ft', 'in') - 12) < 1e-9));
test('unknown unit error', () => assert.throws(() => convertLength(1, 'm', 'parsec'), /unknown unit: parsec/));
test('freezing point', () => assert.strictEqual(celsiusToFahrenheit(0), 32));
test('boiling point', () => assert.strictEqual(celsiusToFahrenheit(100), 212));
test('body temperature', () => assert.ok(Math.abs(fahrenheitToCelsius(98.6) - 37) < 1e-9));
test('minus forty', () => assert.strictEqual(fahrenheitToCelsius(-40), -40));
