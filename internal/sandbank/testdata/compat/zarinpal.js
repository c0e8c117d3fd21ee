// Zarinpal v4 through zarinpal-checkout (npm), unmodified, against the
// sandbox bank. Run by compat_test.go:
//
//	node zarinpal.js '{"base": URL, "op": "request", "amount": N, "callback": URL}'
//	node zarinpal.js '{"base": URL, "op": "verify", "amount": N, "authority": A[, "wrongAmount": M]}'
//
// It prints one JSON line: what the library returned, or what it threw.
//
// Base URL: the library builds https://payment.zarinpal.com/pg/v4/payment/…
// itself and has no base-URL option, but it takes an `httpClient` (its own
// option, the one its tests use): the client below is its default
// FetchHttpClient with the origin swapped for the sandbox bank's, nothing
// else changed.
//
// Library behaviour noted here: it reads an `errors` body only on a
// non-2xx answer. Zarinpal does not document its HTTP statuses (the
// reference: decide on the body's code, never on the status) and the
// sandbox answers the per-payment refusals (-50, -51, -53, -54) with 200,
// so the library reports those as {status: undefined}: not paid, as it
// should be, but without the code.
'use strict';
const { createWithOptions } = require('zarinpal-checkout');

const args = JSON.parse(process.argv[2]);
const MERCHANT = '0b6b7a3c-1f4e-4a57-9b6f-3f5c2a1d7e90';

const httpClient = {
  async request(config) {
    const url = config.url.replace(/^https:\/\/(payment|sandbox)\.zarinpal\.com\//, args.base + '/');
    const res = await fetch(url, {
      method: config.method,
      headers: { accept: 'application/json', 'content-type': 'application/json' },
      body: JSON.stringify(config.data),
      signal: AbortSignal.timeout(10000),
    });
    const data = await res.json();
    if (!res.ok) {
      const err = new Error(`Request failed with status ${res.status}`);
      err.response = { data };
      throw err;
    }
    return { data };
  },
};

async function outcome(call) {
  try {
    return { returned: await call() };
  } catch (e) {
    return { threw: e instanceof Error ? { message: e.message } : e };
  }
}

(async () => {
  const zp = createWithOptions(MERCHANT, { currency: 'IRR', httpClient });
  let out;
  switch (args.op) {
    case 'request':
      out = await outcome(() => zp.PaymentRequest({
        Amount: args.amount, CallbackURL: args.callback, Description: 'kifpool compat test', Mobile: '09120000000',
      }));
      break;
    case 'verify': // twice: the second is Zarinpal's "already verified" (101)
      out = {
        // First, when asked, with another amount than the payment's (-50).
        wrong: args.wrongAmount ? await outcome(() => zp.PaymentVerification({ Amount: args.wrongAmount, Authority: args.authority })) : null,
        first: await outcome(() => zp.PaymentVerification({ Amount: args.amount, Authority: args.authority })),
        second: await outcome(() => zp.PaymentVerification({ Amount: args.amount, Authority: args.authority })),
        unverified: await outcome(() => zp.UnverifiedTransactions()),
      };
      break;
    default:
      throw new Error('unknown op ' + args.op);
  }
  process.stdout.write(JSON.stringify(out) + '\n');
})().catch((e) => { console.error(e); process.exit(1); });
