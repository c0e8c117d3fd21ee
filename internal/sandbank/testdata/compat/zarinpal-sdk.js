// Zarinpal v4 through ZarinPal's own Node.js SDK, zarinpal-node-sdk (npm;
// the SDK zarinpal.com/docs/sdk/nodejs documents), unmodified, against the
// sandbox bank. Run by compat_test.go:
//
//	node zarinpal-sdk.js '{"base": URL, "op": "request", "amount": N, "callback": URL}'
//	node zarinpal-sdk.js '{"base": URL, "op": "verify", "amount": N, "authority": A[, "wrongAmount": M]}'
//
// It prints one JSON line: what the SDK returned, or what it threw.
//
// Base URL: the SDK chooses https://payment.zarinpal.com (or
// https://sandbox.zarinpal.com with `sandbox: true`) in its constructor and
// has no option for another. Its REST calls go through the axios instance
// it creates there, and its payer URL is built from the base it keeps: both
// are pointed at the sandbox bank below, nothing else is changed.
//
// SDK behaviour noted here: it returns the body of any 2xx answer as it is
// and throws axios's error on any other status (the body is then in
// error.response.data). It validates what it sends: an authority must be
// "A" or "S" and 35 letters or digits, an amount at least 1,000.
'use strict';
const { ZarinPal } = require('zarinpal-node-sdk');

const args = JSON.parse(process.argv[2]);
const MERCHANT = '0b6b7a3c-1f4e-4a57-9b6f-3f5c2a1d7e90';

async function outcome(call) {
  try {
    return { returned: await call() };
  } catch (e) {
    if (e && e.response) {
      return { threw: { message: e.message, status: e.response.status, data: e.response.data } };
    }
    return { threw: { message: e instanceof Error ? e.message : String(e) } };
  }
}

(async () => {
  const zp = new ZarinPal({ merchantId: MERCHANT, sandbox: false });
  zp.httpClient.defaults.baseURL = args.base;
  zp.httpClient.defaults.timeout = 10000;
  zp.baseURL = args.base;
  let out;
  switch (args.op) {
    case 'request': {
      const created = await outcome(() => zp.payments.create({
        amount: args.amount, callback_url: args.callback, description: 'kifpool compat test',
        mobile: '09120000000', email: 'payer@example.com',
      }));
      const authority = created.returned && created.returned.data ? created.returned.data.authority : '';
      out = { created, redirect: authority ? zp.payments.getRedirectUrl(authority) : '' };
      break;
    }
    case 'verify': // twice: the second is Zarinpal's "already verified" (101)
      out = {
        // First, when asked, with another amount than the payment's (-50).
        wrong: args.wrongAmount ? await outcome(() => zp.verifications.verify({ amount: args.wrongAmount, authority: args.authority })) : null,
        first: await outcome(() => zp.verifications.verify({ amount: args.amount, authority: args.authority })),
        second: await outcome(() => zp.verifications.verify({ amount: args.amount, authority: args.authority })),
        inquiry: await outcome(() => zp.inquiries.inquire({ authority: args.authority })),
        unverified: await outcome(() => zp.unverified.list()),
      };
      break;
    default:
      throw new Error('unknown op ' + args.op);
  }
  process.stdout.write(JSON.stringify(out) + '\n');
})().catch((e) => { console.error(e); process.exit(1); });
