# Dancer2 serving TechEmpower's test types over SQLite or PostgreSQL (DBI, a connection per process),
# fortunes through Template Toolkit with its html filter.
use strict;
use warnings;
use File::Basename qw(dirname);
use File::Spec;
use lib dirname(File::Spec->rel2abs(__FILE__));
use World;

package WorldDancer {
    use Dancer2;
    use JSON::PP ();

    my $json = JSON::PP->new->canonical;
    set log => 'error';
    set charset => 'UTF-8';
    set views => "$World::DIR/views";
    set template => 'template_toolkit';
    set engines => {template => {template_toolkit => {start_tag => '[%', end_tag => '%]'}}};

    sub as_json { content_type 'application/json'; return $json->encode($_[0]) }

    get '/plaintext' => sub { content_type 'text/plain'; 'Hello, World!' };
    get '/json' => sub { as_json({message => 'Hello, World!'}) };
    get '/db' => sub { as_json(World::row(World::random_id())) };
    get '/queries' => sub {
        as_json([map { World::row($_) } World::random_ids(World::query_count(query_parameters->get('queries')))]);
    };
    get '/updates' => sub {
        my @rows = map { World::row($_) } World::random_ids(World::query_count(query_parameters->get('queries')));
        $_->{randomNumber} = World::random_id() for @rows;
        World::update_rows(\@rows);
        as_json(\@rows);
    };
    get '/fortunes' => sub { template 'fortunes', {fortunes => World::sorted_fortunes()}, {layout => undef} };
}

WorldDancer->to_app;
