package views

// ToBankView is the page that sends the payer to a bank reached by POST
// (SEP, Mellat): one form to Action with the bank's hidden fields.
type ToBankView struct {
	Action      string
	Fields      []FormField
	AmountRials int64
}

// FormField is one hidden field of a form.
type FormField struct{ Name, Value string }
