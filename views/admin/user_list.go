package admin

// UserListView is GET /admin/users.
type UserListView struct {
	Query string
	Users []UserRow
	// ErrorKey is the message of a refused search ("": none); the search
	// field is then marked invalid.
	ErrorKey string
}
