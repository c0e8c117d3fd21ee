package admin

// UserListView is GET /admin/users.
type UserListView struct {
	Query string
	Users []UserRow
}
