package sandbank

import "slices"

// ProtocolZarinpalV4 is the protocol the bank speaks today: Zarinpal's
// REST v4 API and StartPay page (the routes in the package doc).
const ProtocolZarinpalV4 = "zarinpal-v4"

// Protocols are the gateway protocols the sandbox bank imitates. A
// gateway driver names its imitation in gateway.Driver.Sandbox.Protocol;
// adding a gateway adds its protocol here (its routes, codes and states
// beside Zarinpal's).
func Protocols() []string {
	return []string{ProtocolZarinpalV4, ProtocolZibal, ProtocolSEP, ProtocolMellat}
}

// Speaks reports whether the bank imitates protocol.
func Speaks(protocol string) bool { return slices.Contains(Protocols(), protocol) }
