package sandbank

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
)

// The protocols' names and codes as the bank's tests read them: the
// values each protocol's package answers with (the tests check the wire,
// so they spell the wire's values).
const (
	gatewayZarinpal = "zarinpal"
	gatewayZibal    = "zibal"
	gatewaySEP      = "sep"
	gatewayMellat   = "mellat"

	// Zarinpal's codes and its all-zeros merchant (terminal not active).
	codeSuccess         = 100
	codeVerified        = 101
	codeTooManyAttempts = -12
	codeAmountMismatch  = -50
	codeNotPaid         = -51
	zeroMerchant        = "00000000-0000-0000-0000-000000000000"

	// Zarinpal's fault keys.
	opVerify   = "verify"
	opStartPay = "startpay"

	// Zibal's results and statuses.
	zbSuccess         = 100
	zbAlreadyVerified = 201
	zbNotPaid         = 202
	zbStatusVerified  = 1

	// Mellat's ResCodes.
	mlOK              = "0"
	mlCancelled       = "17"
	mlAlreadyVerified = "43"
	mlAlreadySettled  = "45"
)

// apiError is the errors object of a failed Zarinpal call.
type apiError struct {
	Code        int                 `json:"code"`
	Message     string              `json:"message"`
	Validations []map[string]string `json:"validations"`
}

// readSOAPReturn reads a Mellat answer: the response element's name and
// its <return> text.
func readSOAPReturn(raw []byte) (method, ret string, err error) {
	dec := xml.NewDecoder(bytes.NewReader(raw))
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return method, "", errors.New("no <return> in the answer")
		}
		if err != nil {
			return method, "", err
		}
		if t, ok := tok.(xml.StartElement); ok {
			if t.Name.Local == "return" {
				err := dec.DecodeElement(&ret, &t)
				return method, ret, err
			}
			if t.Name.Local != "Envelope" && t.Name.Local != "Body" {
				method = t.Name.Local
			}
		}
	}
}
