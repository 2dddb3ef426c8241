// Fixed zone so that times rendered in tests read the same on every machine.
process.env.TZ = 'UTC';

module.exports = {
  ...require('./.config/jest.config'),
};
