package api

import (
	_ "embed"

	"github.com/gofiber/fiber/v2"
)

// OpenAPI is the API's OpenAPI 3.1 document (openapi.json in this
// directory). The API tests validate every request and answer against it.
//
//go:embed openapi.json
var OpenAPI []byte

func serveOpenAPI(c *fiber.Ctx) error {
	c.Set(fiber.HeaderCacheControl, "public, max-age=300")
	c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
	return c.Send(OpenAPI)
}
