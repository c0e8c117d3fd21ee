package account

import (
	"errors"
	"net/url"

	"github.com/gofiber/fiber/v2"

	"github.com/kifpool/kifpool/internal/auth"
	"github.com/kifpool/kifpool/internal/routes"
	"github.com/kifpool/kifpool/views"
)

// verifyView is the page of a live confirmation link for this browser:
// the question, for the account's own session; otherwise how to get it
// (signing in with the account's password). The link proves the inbox,
// not the account: the owner of an address a stranger signed up with,
// asked "is this your address?", would say yes to the stranger's account.
func (h *handlers) verifyView(c *fiber.Ctx, tok string, linkUser auth.User) views.VerifyView {
	v := views.VerifyView{Token: tok, Email: linkUser.Email}
	switch cur := h.User(c); {
	case cur == nil:
		v.SignInURL = routes.SignIn + "?next=" + url.QueryEscape(routes.EmailVerify(tok))
	case cur.ID != linkUser.ID:
		v.OtherAccount = true
	}
	return v
}

// verifyForm shows a live confirmation link's page. Confirming takes the
// account's session and a button, so that neither a mail scanner opening
// the link nor the address's owner answering for a stranger's account
// confirms anything. The page is never cached, and sends no Referer to
// another site.
func (h *handlers) verifyForm(c *fiber.Ctx) error {
	tok := c.Params("token")
	u, err := h.Auth.CheckVerification(c.UserContext(), tok)
	if errors.Is(err, auth.ErrVerifyInvalid) {
		return h.Render(c, fiber.StatusGone, views.VerifyInvalid(h.Page(c, "verify.invalid_title")))
	}
	if err != nil {
		return err
	}
	return h.Render(c, fiber.StatusOK, views.VerifyEmail(h.Page(c, "verify.title"), h.verifyView(c, tok, u)))
}

// verify uses the link once and confirms the address of the account
// signed in, if the link is that account's.
func (h *handlers) verify(c *fiber.Ctx) error {
	tok := c.Params("token")
	u, err := h.Auth.CheckVerification(c.UserContext(), tok)
	if errors.Is(err, auth.ErrVerifyInvalid) {
		return h.Render(c, fiber.StatusGone, views.VerifyInvalid(h.Page(c, "verify.invalid_title")))
	}
	if err != nil {
		return err
	}
	cur := h.User(c)
	if cur == nil || cur.ID != u.ID {
		return h.Render(c, fiber.StatusForbidden, views.VerifyEmail(h.Page(c, "verify.title"), h.verifyView(c, tok, u)))
	}
	u, err = h.Auth.Verify(c.UserContext(), tok, cur.ID)
	if errors.Is(err, auth.ErrVerifyInvalid) {
		return h.Render(c, fiber.StatusGone, views.VerifyInvalid(h.Page(c, "verify.invalid_title")))
	}
	if err != nil {
		return err
	}
	h.Log.InfoContext(c.UserContext(), "e-mail address confirmed", "user", u.ID)
	// The header and notices of this very page already know.
	cur.EmailVerifiedAt = u.EmailVerifiedAt
	checkout := "" // a checkout that waited for the address: back to it
	if h.PendingCheckout != nil {
		checkout = h.PendingCheckout(c)
	}
	return h.Render(c, fiber.StatusOK, views.VerifyDone(h.Page(c, "verify.done_title"), u.Email, checkout))
}

// resendVerify mails the signed-in person a new confirmation link (none
// past the live links' limit, nor for a confirmed address) and shows the
// account page, which says whether one went and where.
func (h *handlers) resendVerify(c *fiber.Ctx) error {
	u := h.User(c)
	queued, err := h.Auth.RequestVerification(c.UserContext(), u.ID)
	if err != nil {
		return err
	}
	switch {
	case queued:
		if h.MailQueued != nil {
			h.MailQueued()
		}
		return c.Redirect(routes.Account+"?done=verify", fiber.StatusSeeOther)
	case !u.Verified():
		return c.Redirect(routes.Account+"?done=verify_pending", fiber.StatusSeeOther)
	}
	return c.Redirect(routes.Account, fiber.StatusSeeOther)
}
