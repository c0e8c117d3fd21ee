// Zibal IPG v1 through zibal (npm, Zibal's own module), unmodified, against
// the sandbox bank. Run by compat_test.go:
//
//	node zibal.js '{"base": URL, "op": "request", "amount": N, "callback": URL, "orderId": S}'
//	node zibal.js '{"base": URL, "op": "verify", "trackId": N}'
//
// It prints one JSON line: what the library resolved, or what it rejected
// with.
//
// Base URL: the library posts to https://gateway.zibal.ir/v1/… (fixed in
// its lib/urls.js, no option). The redirect is one request interceptor on
// the axios instance the library itself requires (its own nested copy),
// swapping that origin for the sandbox bank's: the library's code and
// bodies are untouched.
//
// Library behaviour noted here: verify rejects its promise for any result
// but 100 (so "already verified", 201, arrives as a rejection), and it
// resolves {success: false} without the code when the HTTP call fails.
'use strict';
const path = require('path');
const Zibal = require('zibal');
const axios = require(require.resolve('axios', { paths: [path.dirname(require.resolve('zibal'))] }));

const args = JSON.parse(process.argv[2]);
axios.interceptors.request.use((config) => {
  config.url = config.url.replace(/^https:\/\/gateway\.zibal\.ir\//, args.base + '/');
  config.timeout = 10000;
  return config;
});

async function outcome(call) {
  try {
    return { returned: await call() };
  } catch (e) {
    return { threw: e instanceof Error ? { message: e.message } : e };
  }
}

(async () => {
  const zibal = new Zibal({ merchant: 'zibal', callbackUrl: args.callback });
  let out;
  switch (args.op) {
    case 'request':
      out = await outcome(() => zibal.request({ amount: args.amount, orderId: args.orderId, description: 'kifpool compat test' }));
      break;
    case 'verify': // twice: the second is Zibal's "already verified" (201)
      out = {
        first: await outcome(() => zibal.verify({ trackId: args.trackId })),
        second: await outcome(() => zibal.verify({ trackId: args.trackId })),
      };
      break;
    default:
      throw new Error('unknown op ' + args.op);
  }
  process.stdout.write(JSON.stringify(out) + '\n');
})().catch((e) => { console.error(e); process.exit(1); });
