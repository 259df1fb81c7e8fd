ALTER TABLE `request_logs` ADD `image_input_tokens` integer;--> statement-breakpoint
ALTER TABLE `request_logs` ADD `image_output_tokens` integer;