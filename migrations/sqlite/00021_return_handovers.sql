-- +goose Up
-- The one hand-over of an API top-up's payer to its return_url (issue 31,
-- item 6): the bank's first return of the payment sends the payer there,
-- and its insert is the claim (the primary key lets one request win);
-- every later visit of the return link shows a page that names the
-- destination and asks for a click, so the link is no open redirect.
CREATE TABLE return_handovers (
    payment_id BIGINT PRIMARY KEY REFERENCES payments (id) ON DELETE CASCADE,
    handed_at  DATETIME NOT NULL
);

-- +goose Down
DROP TABLE return_handovers;
