package views

// UserListView is GET /admin/users.
type UserListView struct {
	Query string
	Users []AdminUserRow
}
