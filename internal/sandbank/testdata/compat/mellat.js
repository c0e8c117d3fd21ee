// Behpardakht Mellat's SOAP service through mellat-checkout (npm; node-soap
// 0.23 underneath), unmodified, against the sandbox bank. Run by
// compat_test.go:
//
//	node mellat.js '{"base": URL, "op": "request", "amount": N, "callback": URL, "orderId": S}'
//	node mellat.js '{"base": URL, "op": "verify", "orderId": S, "saleOrderId": S, "saleReferenceId": S}'
//
// It prints one JSON line: what the library returned, or what it threw.
//
// Base URL: the library's own `apiUrl` option, the WSDL's address. node-soap
// then sends every call to the WSDL's soap:address, which the sandbox bank
// gives as its own absolute URL (as Mellat's names bpm.shaparak.ir).
//
// Library behaviour noted here: bpPayRequest's localTime is sent as
// `${h}${m}${s}` without zero-padding ("953" at 09:05:03; the document
// says HHMMSS) and localDate is the UTC date, not Tehran's.
'use strict';
const Mellat = require('mellat-checkout');

const args = JSON.parse(process.argv[2]);

async function outcome(call) {
  try {
    return { returned: await call() };
  } catch (e) {
    return { threw: { message: String(e && e.message ? e.message : e) } };
  }
}

(async () => {
  const mellat = new Mellat({
    terminalId: '7654321', username: 'kifpool', password: 'secret', timeout: 10000,
    apiUrl: args.base + '/pgwchannel/services/pgw?wsdl',
  });
  let out;
  switch (args.op) {
    case 'request':
      out = await outcome(() => mellat.paymentRequest({
        amount: args.amount, orderId: args.orderId, callbackUrl: args.callback, additionalData: 'kifpool compat test',
      }));
      break;
    case 'verify': { // verify and settle, each twice: 43 and 45 the second time
      const sale = { orderId: args.orderId, saleOrderId: args.saleOrderId, saleReferenceId: args.saleReferenceId };
      out = {
        verify: await outcome(() => mellat.verifyPayment(sale)),
        settle: await outcome(() => mellat.settlePayment(sale)),
        verifyAgain: await outcome(() => mellat.verifyPayment(sale)),
        settleAgain: await outcome(() => mellat.settlePayment(sale)),
        inquiry: await outcome(() => mellat.inquiryRequest(sale)),
      };
      break;
    }
    default:
      throw new Error('unknown op ' + args.op);
  }
  process.stdout.write(JSON.stringify(out) + '\n');
})().catch((e) => { console.error(e); process.exit(1); });
